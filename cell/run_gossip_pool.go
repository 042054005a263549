package cell

import (
	"log/slog"

	"github.com/cellrouter/cellrouter/gossip"
	"github.com/prometheus/client_golang/prometheus"
)

// A cell alone in its gossip pool (its globald restarted and not yet
// rejoined, or a network split) still serves its own clients, so /readyz
// stays 200 and only says the cell is degraded: taking the cell out of
// its load balancer would turn a lost global tier into an outage. The
// cellrouter_gossip_* gauges (gossip.PoolCollectors) show it, and the cell
// logs each change of its standing, while the gossip node rejoins its
// seeds and the members it knew (gossip.Config.RejoinInterval).

// poolDegraded returns why the cell is not fully in its pool ("" when it
// is, or when it is standalone).
func (c *Cell) poolDegraded() string {
	n := c.node.Load()
	if n == nil {
		return ""
	}
	return n.PoolStatus().Degraded()
}

// registerPoolMetrics adds the cellrouter_gossip_* gauges of a cell that
// joins a pool.
func (c *Cell) registerPoolMetrics(reg prometheus.Registerer) {
	if c.cfg.Gossip.Bind == "" {
		return
	}
	reg.MustRegister(gossip.PoolCollectors(c.node.Load, prometheus.Labels{"tier": "cell", "cell": c.cfg.CellID})...)
}

// poolWatch logs each change of the cell's standing in its pool.
type poolWatch struct{ last string }

func (p *poolWatch) check(node *gossip.Node, log *slog.Logger) {
	s := node.PoolStatus()
	why := s.Degraded()
	if why == p.last {
		return
	}
	if why != "" {
		log.Warn("gossip: not fully in the pool; serving alone while rejoining seeds and the members it knew",
			"why", why, "members", s.Members)
	} else {
		log.Info("gossip: in the pool", "members", s.Members)
	}
	p.last = why
}
