package cell

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
)

// collector exports the cell's counters to Prometheus at scrape time. The
// core packages keep plain atomic counters and import no metrics library;
// this is the one place that names them for operators.
type collector struct {
	cellID  string
	ix      *index.Index
	reg     *events.Registry
	applier *events.Applier
	learner *index.Learner                      // nil: no learned blocks to export
	extra   []func(ch chan<- prometheus.Metric) // transports' counters

	batches, eventsApplied, blocksStored, blocksRemoved        *prometheus.Desc
	batchesDropped, eventsDropped, removesUnknown              *prometheus.Desc
	gaps, replays, giveUps, restarts, clears, kills            *prometheus.Desc
	lag                                                        *prometheus.Desc
	evicted                                                    *prometheus.Desc
	indexBlocks, indexBytes, capDrops, staleOps, slots, sweeps *prometheus.Desc
	pods                                                       *prometheus.Desc
	learnedBlocks, learnedEvents, approxPods                   *prometheus.Desc
}

func newCollector(cellID string, ix *index.Index, reg *events.Registry, a *events.Applier) *collector {
	labels := prometheus.Labels{"cell": cellID}
	d := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc("cellrouter_"+name, help, vars, labels)
	}
	return &collector{
		cellID: cellID, ix: ix, reg: reg, applier: a,
		batches:        d("events_batches_applied_total", "Event batches applied to the index."),
		eventsApplied:  d("events_applied_total", "Engine events applied, by kind.", "kind"),
		blocksStored:   d("events_blocks_stored_total", "Router blocks stored in the index."),
		blocksRemoved:  d("events_blocks_removed_total", "Router blocks removed from the index."),
		batchesDropped: d("events_batches_dropped_total", "Event batches dropped, by reason.", "reason"),
		eventsDropped:  d("events_dropped_total", "Engine events skipped, by reason.", "reason"),
		removesUnknown: d("events_removes_unknown_total", "Removed engine blocks the cell did not track."),
		gaps:           d("events_gaps_total", "Sequence gaps detected."),
		replays:        d("events_replays_requested_total", "Replays requested to repair gaps."),
		giveUps:        d("events_gap_give_ups_total", "Gaps abandoned (the pod was cleared instead)."),
		restarts:       d("events_engine_restarts_total", "Engine restarts detected (sequence back to 0)."),
		clears:         d("events_clears_total", "Pods cleared (AllBlocksCleared or restart)."),
		kills:          d("events_pod_kills_total", "Index holders killed (silent pods)."),
		lag:            d("events_lag_seconds", "Apply time minus engine time of event batches."),
		evicted: d("events_evicted_blocks_total", "Engine blocks evicted from a pod's share of the index, by pod and reason: "+
			"pod_bound (the pod reached its max_index_blocks), tracked_bound (events.max_blocks_per_pod), "+
			"fair_share (the index was full and the pod held more than its share).", "pod", "reason"),
		indexBlocks:   d("index_blocks", "Distinct blocks in the index."),
		indexBytes:    d("index_table_bytes", "Memory of the index tables."),
		capDrops:      d("index_cap_drops_total", "Stores refused because the index reached max_blocks."),
		staleOps:      d("index_stale_ops_total", "Index writes ignored for dead slots."),
		slots:         d("index_slots", "Index pod slots by state.", "state"),
		sweeps:        d("index_sweeps_total", "Background sweeps of dead pods finished."),
		pods:          d("pods", "Pods by state.", "state"),
		learnedBlocks: d("index_learned_blocks", "Blocks the cell learned from its own routing, held now, by kind (speculative, approximate).", "kind"),
		learnedEvents: d("index_learned_blocks_total", "Learned blocks by event: speculated and learned (added), confirmed (events stored them), "+
			"expired, evicted (per-pod bound), cut (a removal event), dropped (a pod left approximate mode).", "event"),
		approxPods: d("index_approximate_pods", "Pods routed with the approximate index (no KV events)."),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(desc *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), lv...)
	}
	gauge := func(desc *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, lv...)
	}
	ct := c.applier.Counters()
	counter(c.batches, ct.Batches.Load())
	for _, k := range []events.Kind{events.KindBlockStored, events.KindBlockRemoved, events.KindAllBlocksCleared} {
		counter(c.eventsApplied, ct.Events[k].Load(), k.String())
	}
	counter(c.blocksStored, ct.BlocksStored.Load())
	counter(c.blocksRemoved, ct.BlocksRemoved.Load())
	for _, r := range events.DropReasons() {
		counter(c.batchesDropped, ct.BatchesDropped[r].Load(), r.String())
		counter(c.eventsDropped, ct.EventsDropped[r].Load(), r.String())
	}
	counter(c.removesUnknown, ct.RemovesUnknown.Load())
	counter(c.gaps, ct.Gaps.Load())
	counter(c.replays, ct.ReplaysRequested.Load())
	counter(c.giveUps, ct.GiveUps.Load())
	counter(c.restarts, ct.Restarts.Load())
	counter(c.clears, ct.Clears.Load())
	counter(c.kills, ct.Kills.Load())
	for _, pe := range c.applier.EvictionsByPod() {
		for _, r := range events.EvictReasons() {
			counter(c.evicted, pe.Evicted[r], pe.Pod, r.String())
		}
	}

	buckets := make(map[float64]uint64, len(events.LagBuckets))
	var cum uint64
	for i, ub := range events.LagBuckets {
		cum += ct.Lag.Buckets[i].Load()
		buckets[ub.Seconds()] = cum
	}
	ch <- prometheus.MustNewConstHistogram(c.lag, ct.Lag.Count.Load(), float64(ct.Lag.SumNanos.Load())/1e9, buckets)

	st := c.ix.Stats()
	gauge(c.indexBlocks, float64(st.Blocks))
	gauge(c.indexBytes, float64(st.TableBytes))
	counter(c.capDrops, st.CapDrops)
	counter(c.staleOps, st.StaleOps)
	gauge(c.slots, float64(st.LivePods), "live")
	gauge(c.slots, float64(st.SweepingPods), "sweeping")
	counter(c.sweeps, st.Sweeps)

	byState := map[events.PodState]int{}
	for _, p := range c.reg.Snapshot() {
		byState[p.State]++
	}
	for _, s := range []events.PodState{events.StateUnknown, events.StateReady, events.StateDegraded, events.StateDead} {
		gauge(c.pods, float64(byState[s]), s.String())
	}
	if c.learner != nil {
		ls := c.learner.Stats()
		gauge(c.learnedBlocks, float64(ls.SpeculativeBlocks), "speculative")
		gauge(c.learnedBlocks, float64(ls.ApproximateBlocks), "approximate")
		gauge(c.approxPods, float64(ls.ApproximateSlots))
		for _, e := range []struct {
			name string
			v    uint64
		}{{"speculated", ls.Speculated}, {"learned", ls.Learned}, {"confirmed", ls.Confirmed}, {"expired", ls.Expired},
			{"evicted", ls.Evicted}, {"cut", ls.Cut}, {"dropped", ls.Dropped}} {
			counter(c.learnedEvents, e.v, e.name)
		}
	}
	for _, f := range c.extra {
		f(ch)
	}
}
