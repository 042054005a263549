package cell

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cell/enginemetrics"
	"github.com/cellrouter/cellrouter/cell/events"
)

// engineLogEvery bounds how often the cell logs that pods are routed on the
// router's own estimate because their engine metrics are stale.
const engineLogEvery = 30 * time.Second

// engineScraper runs the cell's engine metrics scraper (engine_metrics):
// its targets are the registry's live pods with an address, its view feeds
// the engine-load plug-ins, and each round updates the metrics, the state
// (GetCellState's engine_load) and a rate-bounded log line when pods fall
// back to the router's own estimate.
type engineScraper struct {
	s   *enginemetrics.Scraper
	log *slog.Logger

	scrapes *prometheus.CounterVec
	stale   prometheus.Gauge
	rounds  prometheus.Histogram

	mu      sync.Mutex
	lastLog time.Time
}

// newEngineScraper builds the scraper of cfg.EngineMetrics, or returns nil
// when it is disabled.
func newEngineScraper(cfg Config, reg *events.Registry, podTLS *tls.Config, promReg *prometheus.Registry, log *slog.Logger, routerLoad func(pod string) (requests, blocks int)) (*engineScraper, error) {
	ec := cfg.EngineMetrics
	if !ec.Enabled {
		return nil, nil
	}
	labels := prometheus.Labels{"cell": cfg.CellID}
	e := &engineScraper{
		log: log,
		scrapes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_engine_metrics_scrapes_total",
			Help: "Scrapes of the engines' metrics endpoints, by outcome (ok, error).", ConstLabels: labels}, []string{"outcome"}),
		stale: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cellrouter_engine_metrics_stale_pods",
			Help: "Pods whose engine metrics are stale or failing: routing uses the router's own load estimate for them.", ConstLabels: labels}),
		rounds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_engine_metrics_round_seconds",
			Help: "Time to scrape every pod once.", ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.001, 2, 12)}),
	}
	promReg.MustRegister(e.scrapes, e.stale, e.rounds)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 2
	scheme := "http"
	if podTLS != nil {
		transport.TLSClientConfig = podTLS
		scheme = "https"
	}
	targets := func() []enginemetrics.Target {
		var out []enginemetrics.Target
		for _, p := range reg.Snapshot() {
			if p.Address == "" || p.State == events.StateDead {
				continue
			}
			out = append(out, enginemetrics.Target{Pod: p.ID, URL: scheme + "://" + p.Address + ec.Path})
		}
		return out
	}
	s, err := enginemetrics.NewScraper(ec, &http.Client{Transport: transport}, targets, nil, enginemetrics.Hooks{
		Scraped: func(_ string, err error, _ time.Duration) {
			if err != nil {
				e.scrapes.WithLabelValues("error").Inc()
			} else {
				e.scrapes.WithLabelValues("ok").Inc()
			}
		},
		Round:      e.round,
		RouterLoad: routerLoad,
	})
	if err != nil {
		return nil, err
	}
	e.s = s
	return e, nil
}

// View implements plugins.EngineSource; a nil scraper gives the empty view.
func (e *engineScraper) View() enginemetrics.View {
	if e == nil {
		return enginemetrics.View{}
	}
	return e.s.View()
}

// run scrapes until ctx ends; it returns when the last round finished.
func (e *engineScraper) run(ctx context.Context) {
	if e != nil {
		e.s.Run(ctx)
	}
}

// round records a finished round: the stale gauge, and a log line (at most
// one per engineLogEvery) naming the pods that fell back.
func (e *engineScraper) round(v enginemetrics.View, took time.Duration) {
	e.rounds.Observe(took.Seconds())
	var stale []string
	firstErr := ""
	v.Pods(func(pod string, s *enginemetrics.Snapshot, fresh bool) {
		if !fresh {
			stale = append(stale, pod)
			if firstErr == "" {
				firstErr = s.Err
			}
		}
	})
	e.stale.Set(float64(len(stale)))
	e.mu.Lock()
	logNow := len(stale) > 0 && v.Now().Sub(e.lastLog) >= engineLogEvery
	if logNow {
		e.lastLog = v.Now()
	}
	e.mu.Unlock()
	if logNow {
		sort.Strings(stale)
		shown := stale[:min(len(stale), 5)]
		e.log.Warn("engine metrics stale or failing: routing these pods on the router's own load estimate",
			"stale_pods", len(stale), "pods", shown, "error", firstErr)
	}
}

// engineLoadProto renders the view for GetCellState, sorted by pod, with
// the number of pods that are not fresh.
func engineLoadProto(e *engineScraper) (uint32, []*cellv1.EngineLoad) {
	if e == nil {
		return 0, nil
	}
	v := e.View()
	var out []*cellv1.EngineLoad
	stale := uint32(0)
	v.Pods(func(pod string, s *enginemetrics.Snapshot, fresh bool) {
		age := int64(-1)
		if a := v.Age(s); a >= 0 {
			age = a.Milliseconds()
		}
		if !fresh {
			stale++
		}
		out = append(out, &cellv1.EngineLoad{Pod: pod, Fresh: fresh, AgeMs: age, Error: s.Err,
			Engine: string(s.Engine), Waiting: s.Waiting, Running: s.Running, KvUsage: s.KVUsage,
			RunningLora: s.RunningLoRA, WaitingLora: s.WaitingLoRA})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return stale, out
}
