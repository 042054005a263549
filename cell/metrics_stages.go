package cell

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// tracerName is the instrumentation scope of the cell's spans. A cell's
// tracer (Cell.tr) is of its own provider (WithTracerProvider) or of the
// global one: a no-op unless the daemon installed a provider.
const tracerName = "github.com/cellrouter/cellrouter/cell"

// routeMetrics are the data plane's Prometheus metrics.
type routeMetrics struct {
	decisions    *prometheus.CounterVec
	decisionTime prometheus.Histogram
	stageTime    *prometheus.HistogramVec
	failOpen     prometheus.Counter
	predictedHit prometheus.Histogram
	realisedHit  prometheus.Histogram
	predictedTok prometheus.Counter
	realisedTok  prometheus.Counter
	promptTok    prometheus.Counter
	upstream     *prometheus.CounterVec
	retries      prometheus.Counter
	inflight     prometheus.Gauge
	ttft         prometheus.Histogram
	matchSource  *prometheus.CounterVec
	prefixWaits  *prometheus.CounterVec
	prefixWait   prometheus.Histogram

	// stages caches stageTime's series by profile (stageObserver).
	stagesMu sync.Mutex
	stages   atomic.Pointer[map[string]*stageObservers]
}

func newRouteMetrics(cellID string, reg prometheus.Registerer) *routeMetrics {
	labels := prometheus.Labels{"cell": cellID}
	frac := []float64{0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1}
	m := &routeMetrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_route_decisions_total",
			Help: "Routing decisions by profile and outcome.", ConstLabels: labels}, []string{"profile", "outcome"}),
		decisionTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_route_decision_seconds",
			Help: "Time to decide (prepare through pick).", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(2e-6, 2, 16)}),
		stageTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cellrouter_route_stage_seconds",
			Help: "Time per pipeline stage.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(5e-7, 2, 16)}, []string{"profile", "stage"}),
		failOpen: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_route_fail_open_total",
			Help: "Decisions that found every pod filtered and ignored the soft filters.", ConstLabels: labels}),
		predictedHit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_route_predicted_hit_ratio",
			Help: "Fraction of the prompt's blocks the chosen pod holds, per the index.", ConstLabels: labels, Buckets: frac}),
		realisedHit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_route_realised_hit_ratio",
			Help: "cached_tokens / prompt_tokens the pod reported.", ConstLabels: labels, Buckets: frac}),
		predictedTok: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_route_predicted_cached_tokens_total",
			Help: "Prompt tokens the index predicted cached on the chosen pods.", ConstLabels: labels}),
		realisedTok: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_route_realised_cached_tokens_total",
			Help: "Prompt tokens the pods reported served from cache.", ConstLabels: labels}),
		promptTok: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_route_prompt_tokens_total",
			Help: "Prompt tokens the pods reported.", ConstLabels: labels}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_upstream_responses_total",
			Help: "Upstream calls by leg and status class.", ConstLabels: labels}, []string{"leg", "status"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_upstream_retries_total",
			Help: "Attempts that failed before the first byte and moved to the next pod.", ConstLabels: labels}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cellrouter_requests_in_flight",
			Help: "Data-plane requests in flight.", ConstLabels: labels}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_time_to_first_byte_seconds",
			Help: "Time from request to the first relayed byte.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(1e-3, 2, 16)}),
		matchSource: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_route_match_source_total",
			Help: "Routed requests by where the picked pod's match came from: exact (events), speculative " +
				"(blocks routed there, not yet confirmed), approximate (a pod without events), none.", ConstLabels: labels}, []string{"source"}),
	}
	m.prefixWaits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_prefix_waits_total",
		Help: "Requests held for a prefill of their own prefix in progress on their pod (routing.prefix_wait; in picker mode, the answer to the gateway held), by how the wait ended: " +
			"stored (the prefill ended), bound (it outlasted the prefill it saves), cancelled (the client, or the gateway, left).", ConstLabels: labels}, []string{"outcome"})
	m.prefixWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_prefix_wait_seconds",
		Help: "Time a request was held for a prefill of its prefix in progress on its pod.", ConstLabels: labels,
		Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14)})
	for _, src := range []string{sourceExact, sourceSpeculative, sourceApproximate, sourceNone} {
		m.matchSource.WithLabelValues(src) // every series from the start
	}
	for _, o := range []string{prefixWaitStored, prefixWaitBound, prefixWaitCancelled} {
		m.prefixWaits.WithLabelValues(o)
	}
	reg.MustRegister(m.decisions, m.decisionTime, m.stageTime, m.failOpen, m.predictedHit, m.realisedHit,
		m.predictedTok, m.realisedTok, m.promptTok, m.upstream, m.retries, m.inflight, m.ttft, m.matchSource,
		m.prefixWaits, m.prefixWait)
	return m
}

// observer reports pipeline stages to tracing (a span per stage) and
// metrics (time per stage). Every span names the cell, which tells the
// cells of one process apart when they share a provider.
type observer struct {
	m    *routeMetrics
	tr   *telemetry.Tracer
	cell string
}

var _ pipeline.Observer = observer{}

func (o observer) Stage(ctx context.Context, profile string, st pipeline.Stage) (context.Context, func(error)) {
	start := time.Now()
	// Without a tracer provider the stage opens no span: its name and
	// attributes would be built for nothing on every stage of every
	// request.
	var span trace.Span
	if o.tr.Enabled() {
		ctx, span = o.tr.Get().Start(ctx, "cell.stage."+st.String(), trace.WithAttributes(
			telemetry.CellKey.String(o.cell), attribute.String("cellrouter.profile", profile)))
	}
	return ctx, func(err error) {
		if o.m != nil {
			o.m.stageObserver(profile, st).Observe(time.Since(start).Seconds())
		}
		if span == nil {
			return
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// stageObservers are the stage-time series of one profile, by stage.
type stageObservers [pipeline.StageExecute + 1]prometheus.Observer

// stageObserver returns the stage-time series of profile and st, looked up
// by label values once per profile: a copy-on-write map read with one
// atomic load, instead of hashing both label values on every stage.
func (m *routeMetrics) stageObserver(profile string, st pipeline.Stage) prometheus.Observer {
	if obs := m.stages.Load(); obs != nil {
		if so, ok := (*obs)[profile]; ok {
			return so[st]
		}
	}
	m.stagesMu.Lock()
	defer m.stagesMu.Unlock()
	next := map[string]*stageObservers{}
	if obs := m.stages.Load(); obs != nil {
		for k, v := range *obs {
			next[k] = v
		}
	}
	so := next[profile]
	if so == nil {
		so = new(stageObservers)
		for i := range so {
			so[i] = m.stageTime.WithLabelValues(profile, pipeline.Stage(i).String())
		}
		next[profile] = so
	}
	m.stages.Store(&next)
	return so[st]
}
