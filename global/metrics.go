package global

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// metrics are the global tier's Prometheus metrics.
type metrics struct {
	requests     *prometheus.CounterVec
	decisionTime prometheus.Histogram
	probes       prometheus.Histogram
	unprobed     prometheus.Counter
	candidates   prometheus.Histogram
	probeErrors  prometheus.Counter
	handoffs     *prometheus.CounterVec
	retries      prometheus.Counter
	predictedTok prometheus.Counter
	realisedTok  prometheus.Counter
	promptTok    prometheus.Counter
	cells        *prometheus.GaugeVec
	summaryAge   *prometheus.GaugeVec
	summaryBytes *prometheus.GaugeVec
	endpoints    *prometheus.GaugeVec
	tokenizeTime *prometheus.HistogramVec
	tokenizeErrs *prometheus.CounterVec
	shed         *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_global_requests_total",
			Help: "Requests by path and outcome. The path is how the request was routed (summary: probed by summary; cold: " +
				"no summary knew the prefix; untokenized: a text prompt or chat the global tier could not tokenize, hence cold) " +
				"and its prompt kind (tokens, text, chat), such as summary_chat."}, []string{"path", "outcome"}),
		decisionTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_global_decision_seconds",
			Help: "Time to choose a cell, probes included.", Buckets: prometheus.ExponentialBuckets(1e-5, 2, 16)}),
		probes: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_global_probes_per_request",
			Help: "Cells probed per request.", Buckets: []float64{0, 1, 2, 3, 4, 6, 8}}),
		candidates: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_global_candidates_per_request",
			Help: "Cells whose summary suggested the prefix.", Buckets: []float64{0, 1, 2, 3, 4, 8, 16, 32, 64}}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_global_shed_total",
			Help: "Requests refused with 429 before the hand-off because every usable cell announced a wait for their " +
				"priority band (only sheddable requests are), by band."}, []string{"band"}),
		unprobed: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_global_unprobed_handoffs_total",
			Help: "Requests routed by summary to their only candidate cell without a probe (see probe_lone)."}),
		probeErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_global_probe_errors_total",
			Help: "Probes that failed or timed out."}),
		handoffs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_global_handoffs_total",
			Help: "Hand-offs to cells by status class."}, []string{"status"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_global_handoff_retries_total",
			Help: "Hand-offs that failed before the first byte and moved to the next cell."}),
		predictedTok: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_global_predicted_cached_tokens_total",
			Help: "Prompt tokens the chosen cell's probe answer predicted cached."}),
		realisedTok: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_global_realised_cached_tokens_total",
			Help: "Prompt tokens the pods reported served from cache."}),
		promptTok: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_global_prompt_tokens_total",
			Help: "Prompt tokens the pods reported."}),
		cells: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellrouter_global_cells",
			Help: "Cells known, by state."}, []string{"state"}),
		summaryAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellrouter_global_summary_age_seconds",
			Help: "Age of each cell's summary."}, []string{"cell"}),
		summaryBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellrouter_global_summary_bytes",
			Help: "Size of each cell's summary."}, []string{"cell"}),
		endpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellrouter_global_cell_endpoints",
			Help: "Live replicas (endpoints) of each cell as gossip sees them."}, []string{"cell"}),
	}
	m.tokenizeTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cellrouter_global_tokenize_seconds",
		Help:    "Time to tokenize a text prompt or chat, by source: local (in process), remote (a cell's /tokenize), cache (a remote answer kept).",
		Buckets: prometheus.ExponentialBuckets(1e-6, 2, 21)}, []string{"source"})
	m.tokenizeErrs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_global_tokenize_errors_total",
		Help: "Tokenizations that failed, by source: local (the built-in template refused a message; the request went remote) " +
			"or remote (the cells' /tokenize failed or timed out; the request went cold)."}, []string{"source"})
	for _, s := range []string{SourceLocal, SourceRemote, SourceCache} {
		m.tokenizeTime.WithLabelValues(s)
	}
	for _, s := range []string{SourceLocal, SourceRemote} {
		m.tokenizeErrs.WithLabelValues(s)
	}
	m.shed.WithLabelValues(auth.PrioritySheddable.String())
	reg.MustRegister(m.tokenizeTime, m.tokenizeErrs, m.shed)
	reg.MustRegister(m.requests, m.decisionTime, m.probes, m.unprobed, m.candidates, m.probeErrors, m.handoffs, m.retries,
		m.predictedTok, m.realisedTok, m.promptTok, m.cells, m.summaryAge, m.summaryBytes, m.endpoints)
	return m
}

// observeTokenize records how a decision tokenized its prompt.
func (m *metrics) observeTokenize(d *Decision) {
	t := &d.Tokenize
	if t.Source != "" {
		m.tokenizeTime.WithLabelValues(t.Source).Observe(t.Took.Seconds())
	}
	if t.LocalErr != nil {
		m.tokenizeErrs.WithLabelValues(SourceLocal).Inc()
	}
	if t.RemoteErr != nil && !errors.Is(t.RemoteErr, context.Canceled) {
		m.tokenizeErrs.WithLabelValues(SourceRemote).Inc()
	}
}

// registerCache exports the tokenization cache's counters, read at
// scrape time.
func registerCache(reg prometheus.Registerer, tok *Tokenizer) {
	for _, r := range []struct {
		result string
		get    func() uint64
	}{{"hit", func() uint64 { return tok.CacheStats().Hits }}, {"miss", func() uint64 { return tok.CacheStats().Misses }}} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellrouter_global_tokenize_cache_total",
			Help:        "Lookups in the tokenization cache (in-process segments and remote answers), by result.",
			ConstLabels: prometheus.Labels{"result": r.result}}, func() float64 { return float64(r.get()) }))
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellrouter_global_tokenize_cache_bytes",
		Help: "Bytes the tokenization cache holds (token ids and per-entry overhead)."},
		func() float64 { return float64(tok.CacheStats().Bytes) }))
}

// observeCells refreshes the per-cell gauges from a directory snapshot.
func (m *metrics) observeCells(views []CellView) {
	m.summaryAge.Reset()
	m.summaryBytes.Reset()
	m.endpoints.Reset()
	counts := map[string]int{"alive": 0, "dead": 0, "draining": 0}
	for _, v := range views {
		switch {
		case !v.Alive:
			counts["dead"]++
		case v.Draining:
			counts["draining"]++
		default:
			counts["alive"]++
		}
		if v.Alive {
			m.endpoints.WithLabelValues(v.ID).Set(float64(len(v.endpoints())))
		}
		if v.Summary != nil {
			m.summaryAge.WithLabelValues(v.ID).Set(v.SummaryAge.Seconds())
			m.summaryBytes.WithLabelValues(v.ID).Set(float64(v.SummaryBytes))
		}
	}
	for s, n := range counts {
		m.cells.WithLabelValues(s).Set(float64(n))
	}
}
