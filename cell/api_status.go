package cell

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
	"github.com/cellrouter/cellrouter/internal/statuspage"
)

// StatusPath is where each daemon serves its status page.
const StatusPath = "/status"

// cellStatus is what the cell's status page shows. It is built from the
// same state builders as GET /v1/cell/state and /v1/cell/pods
// (stateServer.GetCellState, ListPods), with the router's load, the
// index's tiers and the hit rates added.
type cellStatus struct {
	CellID  string
	Now     time.Time
	State   *cellv1.CellState
	Pods    []podStatus
	ByState []stateCount
	Tiers   tierTotals
	Lag     lagSummary
	Drops   []reasonCount // events and transport drops, by reason
	Evicted []reasonCount
	Hits    hitRates
}

// podStatus is one pod's row.
type podStatus struct {
	*cellv1.Pod
	// StateName is the pod's state as the page writes it ("ready",
	// "degraded", "draining", "unconfigured", "dead", "unknown"); Class
	// colours it.
	StateName, Class string
	// Role is the pod's role ("aggregated", "prefill", "decode").
	Role      string
	LastEvent time.Time
	Tiers     tierTotals
	// Requests and Blocks are the router's active load on the pod.
	Requests, Blocks int
	// Engine is the engine's own load (nil: not scraped).
	Engine *cellv1.EngineLoad
}

type stateCount struct {
	Name, Class string
	Count       uint32
}

// tierTotals counts indexed router blocks by tier.
type tierTotals struct{ GPU, CPU, Storage int }

type reasonCount struct {
	Reason string
	N      uint64
}

// lagSummary is the events' lag: apply time minus engine time.
type lagSummary struct {
	Batches uint64
	Mean    time.Duration
	// P99 is the upper bound of the bucket holding the 99th percentile
	// ("" without batches; "> 10s" past the last bucket).
	P99      string
	Negative uint64
}

// hitRates are the data plane's prompt tokens and the shares the router
// predicted and the pods reported cached.
type hitRates struct {
	PromptTokens, PredictedTokens, RealisedTokens float64
	Predicted, Realised                           float64
}

// statusTemplate is the cell's page.
var statusTemplate = statuspage.Must(cellStatusContent)

// statusHandler serves GET /status. decisions lists the
// recent decisions (statuspage.FromRing over the decision ring), newest first (converted to statuspage.Decision, with
// the pod as Target and the match source as Path): nil when the ring is
// off, and the page says so.
func (c *Cell) statusHandler(decisions func() []statuspage.Decision) *statuspage.Handler {
	return &statuspage.Handler{
		Config: c.cfg.Status, Template: statusTemplate, Tier: "cell", Target: "pod",
		Title: "celld " + c.cfg.CellID, Version: buildinfo.Read().Version, Log: c.log,
		Body:      func(now time.Time) (any, error) { return c.status(context.Background(), now) },
		Decisions: decisions,
	}
}

// status builds the page's data.
func (c *Cell) status(ctx context.Context, now time.Time) (*cellStatus, error) {
	st, err := c.state.GetCellState(ctx, &cellv1.GetCellStateRequest{})
	if err != nil {
		return nil, err
	}
	pods, err := c.state.ListPods(ctx, &cellv1.ListPodsRequest{})
	if err != nil {
		return nil, err
	}
	out := &cellStatus{CellID: c.cfg.CellID, Now: now, State: st}
	engines := map[string]*cellv1.EngineLoad{}
	for _, e := range st.GetEngineLoad() {
		engines[e.GetPod()] = e
	}
	byName := map[string]uint32{}
	for _, p := range pods.GetPods() {
		ps := podStatus{Pod: p, Engine: engines[p.GetId()]}
		ps.StateName = strings.ToLower(strings.TrimPrefix(p.GetState().String(), "POD_STATE_"))
		if p.GetDraining() && p.GetState() != cellv1.PodState_POD_STATE_DEAD {
			ps.StateName = "draining"
		}
		ps.Class = stateClass(ps.StateName)
		ps.Role = strings.ToLower(strings.TrimPrefix(p.GetRole().String(), "POD_ROLE_"))
		if ms := p.GetLastEventUnixMs(); ms > 0 {
			ps.LastEvent = time.UnixMilli(ms)
		}
		held := int(p.GetIndexedRouterBlocks())
		var tb index.TierBlocks
		for _, s := range p.GetSlots() {
			t := c.ix.Tiers(index.Slot(s))
			tb.Listed += t.Listed
			for i := range tb.On {
				tb.On[i] += t.On[i]
			}
		}
		ps.Tiers = tierTotals{GPU: tb.GPU(held), CPU: tb.On[index.TierCPU], Storage: tb.On[index.TierStorage]}
		out.Tiers.GPU += ps.Tiers.GPU
		out.Tiers.CPU += ps.Tiers.CPU
		out.Tiers.Storage += ps.Tiers.Storage
		u := c.router.tracker.Usage(p.GetId())
		ps.Requests, ps.Blocks = u.Requests, u.Blocks
		byName[ps.StateName]++
		out.Pods = append(out.Pods, ps)
	}
	sort.Slice(out.Pods, func(i, j int) bool { return out.Pods[i].GetId() < out.Pods[j].GetId() })
	for _, name := range []string{"ready", "degraded", "draining", "unconfigured", "unknown", "dead"} {
		out.ByState = append(out.ByState, stateCount{Name: name, Class: stateClass(name), Count: byName[name]})
	}
	out.Drops = sortedCounts(st.GetEventsDroppedByReason(), "")
	out.Drops = append(out.Drops, sortedCounts(st.GetTransportDroppedByReason(), "transport ")...)
	out.Evicted = sortedCounts(st.GetBlocksEvictedByReason(), "")
	out.Lag = lagOf(&c.applier.Counters().Lag)
	out.Hits = hitRates{PromptTokens: counterValue(c.rm.promptTok), PredictedTokens: counterValue(c.rm.predictedTok),
		RealisedTokens: counterValue(c.rm.realisedTok)}
	out.Hits.Predicted = statuspage.Ratio(out.Hits.PredictedTokens, out.Hits.PromptTokens)
	out.Hits.Realised = statuspage.Ratio(out.Hits.RealisedTokens, out.Hits.PromptTokens)
	return out, nil
}

// stateClass is the colour of a pod state.
func stateClass(state string) string {
	switch state {
	case "ready":
		return "ok"
	case "degraded", "draining", "unconfigured":
		return "warn"
	case "dead":
		return "bad"
	}
	return ""
}

// sortedCounts lists a map's non-zero counts by reason, each prefixed.
func sortedCounts(m map[string]uint64, prefix string) []reasonCount {
	out := make([]reasonCount, 0, len(m))
	for k, n := range m {
		if n > 0 {
			out = append(out, reasonCount{Reason: prefix + k, N: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Reason < out[j].Reason })
	return out
}

// lagOf summarises the applier's lag histogram (its p99 from
// LagHistogram.Quantile, the bound of the bucket it falls in).
func lagOf(h *events.LagHistogram) lagSummary {
	s := lagSummary{Batches: h.Count.Load(), Negative: h.Negative.Load()}
	if s.Batches == 0 {
		return s
	}
	s.Mean = time.Duration(h.SumNanos.Load() / int64(s.Batches))
	if q := h.Quantile(0.99); q >= 0 {
		s.P99 = "≤ " + statuspage.Duration(q)
	} else {
		s.P99 = "> " + statuspage.Duration(events.LagBuckets[len(events.LagBuckets)-1])
	}
	return s
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
