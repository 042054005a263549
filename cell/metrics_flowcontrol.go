package cell

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/internal/auth"
)

// flowMetrics exports what the flow controller does (it implements
// flowcontrol.Observer). Tenants are labels: the key file bounds them
// (auth.MaxTenants); a request without one is tenant "".
type flowMetrics struct {
	queued *prometheus.GaugeVec
	wait   *prometheus.HistogramVec
	shed   *prometheus.CounterVec
	served *prometheus.CounterVec
	weight *prometheus.GaugeVec
}

var _ flowcontrol.Observer = (*flowMetrics)(nil)

func newFlowMetrics(cellID string, reg prometheus.Registerer) *flowMetrics {
	labels := prometheus.Labels{"cell": cellID}
	m := &flowMetrics{
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellrouter_flow_queue_length",
			Help: "Requests waiting in the flow-control queue, by priority band and tenant.", ConstLabels: labels}, []string{"band", "tenant"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cellrouter_flow_wait_seconds",
			Help:        "Time requests waited in the flow-control queue, by band and tenant (every queued request, whatever its outcome).",
			ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"band", "tenant"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_flow_shed_total",
			Help: "Requests the flow-control queue refused, by band and reason: deadline (waited past it), client_deadline (past the client's own shorter bound), shed (a higher band took its place, " +
				"or a higher band's deadline passed), queue_full (refused on arrival), closed (the cell stopped); cancelled counts clients that left.",
			ConstLabels: labels}, []string{"band", "reason"}),
		served: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_flow_served_tokens_total",
			Help: "Tokens (prompt and output) served to each tenant, the measure of its fair share.", ConstLabels: labels}, []string{"tenant"}),
		weight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellrouter_flow_tenant_weight",
			Help: "Each tenant's fair-share weight: its share under saturation is its weight over the active tenants' sum.", ConstLabels: labels}, []string{"tenant"}),
	}
	reg.MustRegister(m.queued, m.wait, m.shed, m.served, m.weight)
	return m
}

// registerFlowController exports what ctl computes on demand: the critical
// requests refused while sheddable ones waited, the requests that left
// the headroom to others, the requests dispatched out of order for cache
// affinity, and the wait estimates.
func registerFlowController(cellID string, reg prometheus.Registerer, ctl *flowcontrol.Controller) {
	labels := prometheus.Labels{"cell": cellID}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellrouter_flow_critical_shed_while_sheddable_queued_total",
		Help: "Critical requests refused while a sheddable request was queued (the design keeps it at 0).", ConstLabels: labels},
		func() float64 { return float64(ctl.Stats().CriticalShedWhileSheddableQueued) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellrouter_flow_headroom_kept_total",
		Help: "Requests that on arrival left the pods' headroom (flow_control.headroom) to tenants under their share or to a higher band: sent to another pod or queued.", ConstLabels: labels},
		func() float64 { return float64(ctl.Stats().HeadroomKept) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellrouter_flow_affinity_reordered_total",
		Help: "Requests dispatched from the queue ahead of an earlier one of their tenant because the freed pod cost them less prefix (flow_control.affinity_lookahead).", ConstLabels: labels},
		func() float64 { return float64(ctl.Stats().AffinityReordered) }))
	for _, b := range auth.Priorities() {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellrouter_flow_wait_estimate_seconds",
			Help:        "How long a new request of each band would wait now (what the cell gossips).",
			ConstLabels: prometheus.Labels{"cell": cellID, "band": b.String()}},
			func() float64 { return ctl.WaitEstimate(b).Seconds() }))
	}
}

// Queued implements flowcontrol.Observer.
func (m *flowMetrics) Queued(tenant string, band auth.Priority, delta int) {
	m.queued.WithLabelValues(band.String(), tenant).Add(float64(delta))
}

// Left implements flowcontrol.Observer.
func (m *flowMetrics) Left(tenant string, band auth.Priority, waited time.Duration, outcome string) {
	if outcome != flowcontrol.OutcomeRefused {
		m.wait.WithLabelValues(band.String(), tenant).Observe(waited.Seconds())
	}
	if outcome != flowcontrol.OutcomeDispatched {
		m.shed.WithLabelValues(band.String(), outcome).Inc()
	}
}

// Served implements flowcontrol.Observer.
func (m *flowMetrics) Served(tenant string, _ auth.Priority, tokens, weight float64) {
	m.served.WithLabelValues(tenant).Add(max(tokens, 0))
	m.weight.WithLabelValues(tenant).Set(weight)
}
