package global

import (
	"context"
	"log/slog"
	"time"

	"github.com/cellrouter/cellrouter/gossip"
	"github.com/prometheus/client_golang/prometheus"
)

// poolNotReady returns why the replica is not ready as far as its pool
// goes ("" when it is, or has no pool). A globald alone in its pool knows
// no cell, so it could only answer no_cell_available: /readyz says why,
// while the node keeps rejoining its seeds and the cells it knew.
func (g *Global) poolNotReady() string {
	if g.pool == nil {
		return ""
	}
	if s := g.pool(); s.Alone {
		return s.Degraded()
	}
	return ""
}

// attachPool makes the daemon's node the replica's pool: its standing
// gates /readyz and shows in the cellrouter_gossip_* metrics.
func (g *Global) attachPool(node *gossip.Node) {
	g.pool = node.PoolStatus
	g.reg.MustRegister(gossip.PoolCollectors(func() *gossip.Node { return node }, prometheus.Labels{"tier": "global"})...)
}

// watchPool logs each change of the node's standing in its pool (alone,
// back in it, seeds missing) every period until ctx ends.
func watchPool(ctx context.Context, node *gossip.Node, period time.Duration, log *slog.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	last := ""
	for {
		s := node.PoolStatus()
		if why := s.Degraded(); why != last {
			if why != "" {
				log.Warn("gossip: not fully in the pool; rejoining seeds and the members it knew", "why", why, "members", s.Members)
			} else {
				log.Info("gossip: in the pool", "members", s.Members)
			}
			last = why
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
