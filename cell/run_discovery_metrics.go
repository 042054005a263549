package cell

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/cell/events/zmqsub"
)

// collect exports the pod set and the discovery source: the pods held by
// state, the pods refused by reason, the set's version, the source's
// decisions and watch errors, the live subscriptions, and the discovered
// pods' ZMQ counters (transport "zmq_discovered", the retired
// subscriptions' included).
func (d *discoverySync) collect(cellID string) func(chan<- prometheus.Metric) {
	labels := prometheus.Labels{"cell": cellID}
	desc := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc("cellrouter_"+name, help, vars, labels)
	}
	pods := desc("pod_set_pods", "Pods the cell holds (static and discovered): routable (Ready) or kept (not Ready, or terminating).", "state")
	refused := desc("pod_set_refused_pods", "Pods offered by a source that the cell refused: past the index's holder cap (cap), or a static pod's id (static).", "reason")
	version := desc("pod_set_version", "Version of the live pod set; it increases with every change.")
	decisions := desc("discovery_decisions_total", "Pod sets the Kubernetes source decided (one per change it saw).")
	watchErrs := desc("discovery_watch_errors_total", "Lists and watches of the Kubernetes API that failed (the informers retry with backoff).")
	poolErrs := desc("discovery_pool_errors_total", "InferencePool versions the cell could not use.")
	dialed := desc("discovery_subscribed_pods", "Discovered pods whose KV events the cell subscribes to.")
	return func(ch chan<- prometheus.Metric) {
		g := func(dd *prometheus.Desc, v float64, lv ...string) {
			ch <- prometheus.MustNewConstMetric(dd, prometheus.GaugeValue, v, lv...)
		}
		c := func(dd *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(dd, prometheus.CounterValue, float64(v))
		}
		snap := d.c.pods.Load()
		r, k := snap.Counts()
		g(pods, float64(r), "routable")
		g(pods, float64(k), "kept")
		byReason := map[string]int{"cap": 0, "static": 0}
		for _, x := range snap.Refused {
			byReason[x.Reason]++
		}
		for reason, n := range byReason {
			g(refused, float64(n), reason)
		}
		g(version, float64(snap.Version))
		ct := d.src.Counters()
		c(decisions, ct.Decisions.Load())
		c(watchErrs, ct.WatchErrors.Load())
		c(poolErrs, ct.PoolErrors.Load())
		var sum zmqsub.Counters
		d.mu.Lock()
		addZMQCounters(&sum, &d.retired)
		for sub := range d.live {
			addZMQCounters(&sum, sub.Counters())
		}
		n := len(d.live)
		d.mu.Unlock()
		g(dialed, float64(n))
		zmqMetricsOf(cellID, "zmq_discovered", &sum)(ch)
	}
}

// addZMQCounters adds src's counters to dst.
func addZMQCounters(dst, src *zmqsub.Counters) {
	dst.Messages.Add(src.Messages.Load())
	for i := range src.DecodeErrors {
		dst.DecodeErrors[i].Add(src.DecodeErrors[i].Load())
	}
	dst.ReplaysRequested.Add(src.ReplaysRequested.Load())
	dst.ReplaysSucceeded.Add(src.ReplaysSucceeded.Load())
	dst.ReplaysFailed.Add(src.ReplaysFailed.Load())
	dst.BatchesReplayed.Add(src.BatchesReplayed.Load())
	dst.GiveUps.Add(src.GiveUps.Load())
	dst.Restarts.Add(src.Restarts.Load())
	dst.Resumes.Add(src.Resumes.Load())
	dst.ModelChanges.Add(src.ModelChanges.Load())
	dst.Connects.Add(src.Connects.Load())
	dst.DialFailures.Add(src.DialFailures.Load())
	dst.Disconnects.Add(src.Disconnects.Load())
}
