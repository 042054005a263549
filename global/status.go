package global

import (
	"math"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
	"github.com/cellrouter/cellrouter/internal/statuspage"
)

// StatusPath is where globald serves its status page.
const StatusPath = "/status"

// globalStatus is what globald's status page shows: the cells as the
// directory sees them (the views the router decides from), with what the
// data plane learned of each (cellStats) and the tier's hit rates.
type globalStatus struct {
	Now      time.Time
	Cells    []cellStatus
	Alive    int
	Dead     int
	Draining int
	// Endpoints counts the live replicas of every cell.
	Endpoints int
	// Tokens are the tier's prompt tokens, predicted and realised cached
	// tokens, from the Prometheus counters.
	PromptTokens, PredictedTokens, RealisedTokens float64
	Predicted, Realised                           float64
}

// cellStatus is one cell's row.
type cellStatus struct {
	ID, State, Class string
	Endpoints        []Endpoint
	// ModelCount is the number of models the cell advertises (-1: it does
	// not say); Models are those of them the tier knows by name (its
	// tokenizers' and those requests named).
	ModelCount int
	Models     []string
	HasSummary bool
	SummaryGen uint64
	SummaryAge time.Duration
	// SummaryBytes is the summary's size; FPRate its estimated
	// false-positive rate (NaN when the summary cannot say).
	SummaryBytes int
	FPRate       float64
	Load         CellLoad
	// Saturation is the cell's active KV blocks over its active and free
	// ones (NaN when it reports neither).
	Saturation float64
	Stats      cellCounters
	MeanRTT    time.Duration
	// Predicted and Realised are the shares of the cell's prompt tokens
	// its probes predicted cached and its pods reported cached.
	Predicted, Realised float64
}

// falsePositives is a summary that can estimate its false-positive rate
// (a gossip.Summary).
type falsePositives interface{ EstimatedFalsePositiveRate() float64 }

var _ falsePositives = (*gossip.Summary)(nil)

// statusTemplate is globald's page.
var statusTemplate = statuspage.Must(globalStatusContent)

// statusHandler serves GET /status. decisions lists the
// recent decisions (statuspage.FromRing over the decision ring), newest first (converted to statuspage.Decision, with
// the cell as Target and the routing path, such as summary_chat, as
// Path): nil when the ring is off, and the page says so.
func (g *Global) statusHandler(decisions func() []statuspage.Decision) *statuspage.Handler {
	return &statuspage.Handler{
		Config: g.cfg.Status, Template: statusTemplate, Tier: "global", Target: "cell",
		Title: "globald", Version: buildinfo.Read().Version, Log: g.log,
		Body:      func(now time.Time) (any, error) { return g.status(now), nil },
		Decisions: decisions,
	}
}

// status builds the page's data.
func (g *Global) status(now time.Time) *globalStatus {
	views := g.rt.views()
	sort.Slice(views, func(a, b int) bool { return views[a].ID < views[b].ID })
	keep := make(map[string]bool, len(views))
	for i := range views {
		keep[views[i].ID] = true
	}
	stats := g.stats.snapshot(keep)
	out := &globalStatus{Now: now, PromptTokens: counterValue(g.m.promptTok), PredictedTokens: counterValue(g.m.predictedTok),
		RealisedTokens: counterValue(g.m.realisedTok)}
	out.Predicted = statuspage.Ratio(out.PredictedTokens, out.PromptTokens)
	out.Realised = statuspage.Ratio(out.RealisedTokens, out.PromptTokens)
	names := g.knownModels(stats)
	for i := range views {
		v := &views[i]
		cs := cellStatus{ID: v.ID, State: "alive", Class: "ok", ModelCount: -1, Load: v.Load, Stats: stats[v.ID],
			FPRate: math.NaN(), HasSummary: v.Summary != nil, SummaryGen: v.SummaryGen, SummaryAge: v.SummaryAge,
			SummaryBytes: v.SummaryBytes}
		switch {
		case !v.Alive:
			cs.State, cs.Class = "dead", "bad"
			out.Dead++
		case v.Draining:
			cs.State, cs.Class = "draining", "warn"
			out.Draining++
		default:
			out.Alive++
		}
		if v.Alive {
			cs.Endpoints = v.endpoints()
			out.Endpoints += len(cs.Endpoints)
		}
		if ms, ok := v.Models.(gossip.ModelSet); ok {
			cs.ModelCount = ms.Len()
		}
		if v.Models != nil {
			for _, m := range names {
				if v.Models.Has(m) {
					cs.Models = append(cs.Models, m)
				}
			}
		}
		if fp, ok := v.Summary.(falsePositives); ok {
			cs.FPRate = fp.EstimatedFalsePositiveRate()
		}
		cs.Saturation = statuspage.Ratio(float64(v.Load.ActiveBlocks), float64(v.Load.ActiveBlocks+v.Load.FreeBlocks))
		cs.MeanRTT = cs.Stats.MeanRTT()
		cs.Predicted = statuspage.Ratio(float64(cs.Stats.PredictedTokens), float64(cs.Stats.PromptTokens))
		cs.Realised = statuspage.Ratio(float64(cs.Stats.RealisedTokens), float64(cs.Stats.PromptTokens))
		out.Cells = append(out.Cells, cs)
	}
	return out
}

// knownModels lists the model names the tier knows, sorted: its
// tokenizers' and those requests named.
func (g *Global) knownModels(stats map[string]cellCounters) []string {
	set := map[string]bool{}
	for _, m := range g.cfg.Tokenize.Models {
		set[m.Model] = true
	}
	for _, c := range stats {
		for _, m := range c.Models {
			set[m] = true
		}
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// counterValue reads a Prometheus counter: the page shows the figures the
// metrics export, from the same counters.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
