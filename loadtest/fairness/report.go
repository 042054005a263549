package fairness

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/loadtest/report"
)

// Report is the benchmark's result. The first four fields are the issue's
// targets (see the package doc).
type Report struct {
	// QuietP99Ratio is the quiet tenant's TTFT p99 in mixed over solo.
	QuietP99Ratio float64 `json:"quiet_p99_ratio"`
	// QuietP50Ratio is the same at the median, steadier than the p99 of
	// a few dozen requests on a shared machine.
	QuietP50Ratio float64 `json:"quiet_p50_ratio"`
	// ShareErrorMax is the largest relative gap between a tenant's share
	// of the served tokens and its weight's share, in the shares phase.
	ShareErrorMax float64 `json:"share_error_max"`
	// CriticalShedWhileSheddableQueued counts critical requests refused
	// while a sheddable one was outstanding, in the priority phase.
	CriticalShedWhileSheddableQueued int `json:"critical_shed_while_sheddable_queued"`
	// ReuseLossVsOff is 1 - reuse(mixed)/reuse(mixed_off) over the
	// requests both phases served (ReuseCompared of them; flow control
	// sheds some that the phase without it serves, and a phase's own reuse
	// depends on which): the prefix reuse flow control costs (negative:
	// it gained).
	ReuseLossVsOff float64 `json:"reuse_loss_vs_off"`
	ReuseCompared  int     `json:"reuse_compared"`
	// QuietP99RatioNoHeadroom and QuietP50RatioNoHeadroom are the quiet
	// tenant's ratios with flow control on but no headroom
	// (mixed_no_headroom: a work-conserving queue); NoisyServedVsNoHeadroom
	// is the noisy tenant's served tokens in mixed over mixed_no_headroom,
	// what the headroom costs it. All 0 when the run keeps no headroom.
	QuietP99RatioNoHeadroom float64 `json:"quiet_p99_ratio_no_headroom"`
	QuietP50RatioNoHeadroom float64 `json:"quiet_p50_ratio_no_headroom"`
	NoisyServedVsNoHeadroom float64 `json:"noisy_served_vs_no_headroom"`

	// CapacityRPS is the fleet's estimated capacity, requests a second;
	// QuietRPS and NoisyRPS the two tenants' rates in the mixed phases,
	// the noisy one NoisyFactor times its share.
	CapacityRPS float64 `json:"capacity_rps"`
	QuietRPS    float64 `json:"quiet_rps"`
	NoisyRPS    float64 `json:"noisy_rps"`
	NoisyFactor float64 `json:"noisy_factor"`
	Pods        int     `json:"pods"`
	MaxRunning  int     `json:"max_running"`
	DurationS   float64 `json:"duration_s"`

	Solo  *Phase `json:"solo"`
	Mixed *Phase `json:"mixed"`
	// MixedNoHeadroom is mixed with flow control's headroom at 0; nil
	// when Config.Headroom is 0.
	MixedNoHeadroom *Phase  `json:"mixed_no_headroom,omitempty"`
	MixedOff        *Phase  `json:"mixed_off"`
	Shares          *Phase  `json:"shares"`
	Priority        *Phase  `json:"priority"`
	WallS           float64 `json:"wall_s"`
}

// Phase is one phase's result.
type Phase struct {
	Name        string `json:"name"`
	FlowControl bool   `json:"flow_control"`
	// Headroom is the cell's flow_control.headroom in the phase.
	Headroom float64 `json:"headroom"`
	// Requests were sent; Served answered with a stream; Shed refused
	// with 429; Errors failed otherwise.
	Requests int `json:"requests"`
	Served   int `json:"served"`
	Shed     int `json:"shed"`
	Errors   int `json:"errors"`
	// Reuse is the cached over the prompt tokens of the served requests.
	Reuse float64 `json:"reuse"`
	// CriticalShedWhileSheddableQueued counts the critical requests
	// refused while a sheddable request was outstanding.
	CriticalShedWhileSheddableQueued int       `json:"critical_shed_while_sheddable_queued"`
	Tenants                          []*Tenant `json:"tenants"`
}

// Tenant is one tenant's part of a phase.
type Tenant struct {
	Name     string  `json:"name"`
	Priority string  `json:"priority"`
	Weight   float64 `json:"weight"`
	RPS      float64 `json:"rps"`
	Requests int     `json:"requests"`
	Served   int     `json:"served"`
	// Shed counts 429s, ShedByCode by their error code (queue_timeout,
	// queue_full, ...).
	Shed       int            `json:"shed"`
	ShedByCode map[string]int `json:"shed_by_code,omitempty"`
	Errors     int            `json:"errors"`
	// ErrorsBy counts the errors by their code, else their HTTP status,
	// else "transport" (the request failed or its stream broke).
	ErrorsBy  map[string]int `json:"errors_by,omitempty"`
	TTFTP50Ms float64        `json:"ttft_p50_ms"`
	TTFTP99Ms float64        `json:"ttft_p99_ms"`
	// ServedTokens are the prompt and output tokens of the requests whose
	// first token came in the middle half of the phase (when every
	// tenant is sending); TokenShare is their share of all tenants',
	// WeightShare the weight's, ShareError |TokenShare/WeightShare - 1|.
	ServedTokens int64   `json:"served_tokens"`
	TokenShare   float64 `json:"token_share"`
	WeightShare  float64 `json:"weight_share"`
	ShareError   float64 `json:"share_error"`
}

// summarise makes a phase's result from its outcomes.
func summarise(name string, flow bool, ts []*tenant, outs []outcome, d time.Duration) *Phase {
	p := &Phase{Name: name, FlowControl: flow}
	var start time.Time
	for i := range outs {
		if start.IsZero() || outs[i].sent.Before(start) {
			start = outs[i].sent
		}
	}
	from, to := start.Add(d/4), start.Add(3*d/4)
	byName := map[string]*Tenant{}
	ttfts := map[string][]float64{}
	var wsum float64
	for _, t := range ts {
		x := &Tenant{Name: t.name, Priority: t.priority.String(), Weight: t.weight, RPS: t.rate}
		byName[t.name] = x
		p.Tenants = append(p.Tenants, x)
		wsum += t.weight
	}
	var prompt, cached, tokens int64
	for i := range outs {
		o := &outs[i]
		x := byName[o.tenant]
		x.Requests++
		p.Requests++
		switch {
		case o.ok():
			x.Served++
			p.Served++
			prompt += int64(o.prompt)
			cached += int64(o.cached)
			ttfts[o.tenant] = append(ttfts[o.tenant], float64(o.ttft())/float64(time.Millisecond))
			if !o.first.Before(from) && o.first.Before(to) {
				n := int64(o.prompt + o.completion)
				x.ServedTokens += n
				tokens += n
			}
		case o.shed():
			x.Shed++
			p.Shed++
			if x.ShedByCode == nil {
				x.ShedByCode = map[string]int{}
			}
			x.ShedByCode[o.code]++
		default:
			x.Errors++
			p.Errors++
			if x.ErrorsBy == nil {
				x.ErrorsBy = map[string]int{}
			}
			why := "transport"
			switch {
			case o.code != "":
				why = o.code
			case o.err == nil:
				why = strconv.Itoa(o.status)
			}
			x.ErrorsBy[why]++
		}
	}
	for _, x := range p.Tenants {
		v := ttfts[x.Name]
		sort.Float64s(v)
		if len(v) > 0 {
			x.TTFTP50Ms, x.TTFTP99Ms = report.Percentile(v, 50), report.Percentile(v, 99)
		}
		x.WeightShare = x.Weight / wsum
		if tokens > 0 {
			x.TokenShare = float64(x.ServedTokens) / float64(tokens)
			x.ShareError = math.Abs(x.TokenShare/x.WeightShare - 1)
		}
	}
	if prompt > 0 {
		p.Reuse = float64(cached) / float64(prompt)
	}
	p.CriticalShedWhileSheddableQueued = criticalShedWhileSheddable(ts, outs)
	return p
}

// criticalShedWhileSheddable counts the critical tenants' 429s answered
// while some sheddable tenant's request was outstanding: sent before the
// refusal, and neither its first chunk nor its answer before it.
func criticalShedWhileSheddable(ts []*tenant, outs []outcome) int {
	band := map[string]auth.Priority{}
	for _, t := range ts {
		band[t.name] = t.priority
	}
	var pending []*outcome
	for i := range outs {
		if band[outs[i].tenant] == auth.PrioritySheddable {
			pending = append(pending, &outs[i])
		}
	}
	n := 0
	for i := range outs {
		o := &outs[i]
		if band[o.tenant] != auth.PriorityCritical || !o.shed() {
			continue
		}
		at := o.done
		for _, s := range pending {
			left := s.done
			if !s.first.IsZero() {
				left = s.first
			}
			if s.sent.Before(at) && left.After(at) {
				n++
				break
			}
		}
	}
	return n
}

// finish computes the top-level figures from the phases.
func (r *Report) finish() {
	if q, s := tenantOf(r.Mixed, "quiet"), tenantOf(r.Solo, "quiet"); q != nil && s != nil && s.TTFTP99Ms > 0 {
		r.QuietP99Ratio = q.TTFTP99Ms / s.TTFTP99Ms
		r.QuietP50Ratio = q.TTFTP50Ms / s.TTFTP50Ms
		if n := tenantOf(r.MixedNoHeadroom, "quiet"); n != nil {
			r.QuietP99RatioNoHeadroom = n.TTFTP99Ms / s.TTFTP99Ms
			r.QuietP50RatioNoHeadroom = n.TTFTP50Ms / s.TTFTP50Ms
		}
	}
	if a, b := tenantOf(r.Mixed, "noisy"), tenantOf(r.MixedNoHeadroom, "noisy"); a != nil && b != nil && b.ServedTokens > 0 {
		r.NoisyServedVsNoHeadroom = float64(a.ServedTokens) / float64(b.ServedTokens)
	}
	for _, t := range r.Shares.Tenants {
		r.ShareErrorMax = max(r.ShareErrorMax, t.ShareError)
	}
	r.CriticalShedWhileSheddableQueued = r.Priority.CriticalShedWhileSheddableQueued
}

// reuseLoss compares the prefix reuse (cached over prompt tokens) of the
// requests that both on and off served: 1 - on/off, and how many.
func reuseLoss(on, off []outcome) (float64, int) {
	type key struct {
		tenant string
		idx    int
	}
	served := map[key]*outcome{}
	for i := range off {
		if off[i].ok() {
			served[key{off[i].tenant, off[i].idx}] = &off[i]
		}
	}
	var onPrompt, onCached, offPrompt, offCached int64
	n := 0
	for i := range on {
		o := &on[i]
		f, ok := served[key{o.tenant, o.idx}]
		if !o.ok() || !ok {
			continue
		}
		n++
		onPrompt, onCached = onPrompt+int64(o.prompt), onCached+int64(o.cached)
		offPrompt, offCached = offPrompt+int64(f.prompt), offCached+int64(f.cached)
	}
	if onPrompt == 0 || offCached == 0 {
		return 0, n
	}
	return 1 - (float64(onCached)/float64(onPrompt))/(float64(offCached)/float64(offPrompt)), n
}

// tenantOf returns the named tenant of p, or nil.
func tenantOf(p *Phase, name string) *Tenant {
	if p == nil {
		return nil
	}
	for _, t := range p.Tenants {
		if t.Name == name {
			return t
		}
	}
	return nil
}
