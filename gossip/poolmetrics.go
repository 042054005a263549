package gossip

import "github.com/prometheus/client_golang/prometheus"

// PoolCollectors returns the metrics of a node's standing in its pool,
// read at scrape time from node (which may return nil before the node
// starts or after it stops: the gauges then read 0), labelled with
// labels:
//
//   - cellrouter_gossip_members: live members, this node included;
//   - cellrouter_gossip_alone: 1 when no other member is live;
//   - cellrouter_gossip_missing_seeds: configured seeds not in the pool;
//   - cellrouter_gossip_rejoins_total: the rejoin loop's Joins that
//     reached a member.
func PoolCollectors(node func() *Node, labels prometheus.Labels) []prometheus.Collector {
	status := func(f func(PoolStatus) float64) func() float64 {
		return func() float64 {
			n := node()
			if n == nil {
				return 0
			}
			return f(n.PoolStatus())
		}
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellrouter_gossip_members", ConstLabels: labels,
			Help: "Live members of the gossip pool as this node sees them, itself included."},
			status(func(s PoolStatus) float64 { return float64(s.Members) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellrouter_gossip_alone", ConstLabels: labels,
			Help: "1 when no other member of the gossip pool is live (the node keeps rejoining its seeds and the members it knew)."},
			status(func(s PoolStatus) float64 {
				if s.Alone {
					return 1
				}
				return 0
			})),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellrouter_gossip_missing_seeds", ConstLabels: labels,
			Help: "Configured gossip seeds that no live member answers at."},
			status(func(s PoolStatus) float64 { return float64(len(s.MissingSeeds)) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellrouter_gossip_rejoins_total", ConstLabels: labels,
			Help: "Joins of the rejoin loop that reached a member of the pool."},
			status(func(s PoolStatus) float64 { return float64(s.Rejoins) })),
	}
}
