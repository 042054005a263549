package edge

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The limit label values of cellrouter_limit_hits_total.
const (
	LimitBodySize      = "body_size"
	LimitHeaderSize    = "header_size"
	LimitBodyTimeout   = "body_timeout"
	LimitHeaderTimeout = "header_timeout"
	LimitIdleTimeout   = "idle_timeout"
	LimitStreams       = "streams"
	LimitBufferBudget  = "buffer_budget"
	// LimitPromptBytes and LimitPromptTokens count prompts refused for
	// their model's prompt limits (openai.PromptLimits), which the
	// daemons check.
	LimitPromptBytes  = "prompt_bytes"
	LimitPromptTokens = "prompt_tokens"
)

// Metrics are the edge's Prometheus metrics. A nil *Metrics counts
// nothing (tests, tools).
type Metrics struct {
	rejected  *prometheus.CounterVec
	requests  *prometheus.CounterVec
	inflight  *prometheus.GaugeVec
	limitHits *prometheus.CounterVec
	reloads   *prometheus.CounterVec
	keys      prometheus.Gauge
	buffered  prometheus.Gauge
}

// NewMetrics registers the edge's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_auth_rejected_total",
			Help: "Requests refused by authentication or authorization, by reason (missing_key, invalid_key, forbidden)."}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_tenant_requests_total",
			Help: "Data-plane requests of each tenant, by outcome (admitted, rate_limited, concurrency_limited)."}, []string{"tenant", "outcome"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellrouter_tenant_inflight_requests",
			Help: "Data-plane requests of each tenant in flight."}, []string{"tenant"}),
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_limit_hits_total",
			Help: "Requests or connections cut off by a server limit (body_size, header_size, body_timeout, header_timeout, idle_timeout, streams, buffer_budget, prompt_bytes, prompt_tokens)."}, []string{"limit"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_config_reloads_total",
			Help: "Reloads of files that change at run time (keys, tls, keyring), by outcome (ok, error)."}, []string{"file", "outcome"}),
		keys: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cellrouter_api_keys", Help: "API keys in the current key file."}),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cellrouter_buffered_request_bytes",
			Help: "Request body bytes reserved against the process's budget (limits max_buffered_bytes) by requests in flight."}),
	}
	for _, l := range []string{LimitBodySize, LimitHeaderSize, LimitBodyTimeout, LimitHeaderTimeout, LimitIdleTimeout, LimitStreams, LimitBufferBudget, LimitPromptBytes, LimitPromptTokens} {
		m.limitHits.WithLabelValues(l)
	}
	reg.MustRegister(m.rejected, m.requests, m.inflight, m.limitHits, m.reloads, m.keys, m.buffered)
	return m
}

// Hit counts one hit of limit.
func (m *Metrics) Hit(limit string) {
	if m != nil {
		m.limitHits.WithLabelValues(limit).Inc()
	}
}

// Reloaded counts one reload of file ("keys", "tls", "keyring") with its
// outcome.
func (m *Metrics) Reloaded(file string, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.reloads.WithLabelValues(file, outcome).Inc()
}

func (m *Metrics) reject(reason string) {
	if m != nil {
		m.rejected.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) tenant(name, outcome string) {
	if m != nil {
		m.requests.WithLabelValues(name, outcome).Inc()
	}
}

func (m *Metrics) inflightAdd(name string, d float64) {
	if m != nil {
		m.inflight.WithLabelValues(name).Add(d)
	}
}

func (m *Metrics) setKeys(n int) {
	if m != nil {
		m.keys.Set(float64(n))
	}
}

// bufferedAdd moves the buffered request bytes gauge by d.
func (m *Metrics) bufferedAdd(d int64) {
	if m != nil {
		m.buffered.Add(float64(d))
	}
}
