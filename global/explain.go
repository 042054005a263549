package global

import (
	"slices"

	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
)

// Roles of an explained cell in the hand-off order (ExplainCell.role).
const (
	roleChoice    = "choice"    // ordered by the probes' answers (Choose)
	roleCandidate = "candidate" // a search candidate handed off unprobed, or cold
	roleFallback  = "fallback"  // a least loaded cell added for retries
)

// explain builds the explanation of decision d from the notes its
// decide call filled: every cell with its summary's estimate, its gossiped
// load and the load this router added since, the search's bound and
// whether it was a candidate, the probe's exact answer and round trip, the
// distance and the terms of the choice's cost, and its rank and role in the
// hand-off order. Every value is the decision's own: the estimates the
// search was given, the answers Choose ordered, and the cost terms from the
// function Choose computes them with (chooseTerms; the bound from
// searchBound). topK > 0 keeps only the topK best ranked cells (the
// decision ring's records); 0 keeps them all. It returns nil when d or
// notes is nil.
func (rt *Router) explain(d *Decision, notes *explainNotes, topK int) *globalv1.Explanation {
	if d == nil || notes == nil {
		return nil
	}
	x := &globalv1.Explanation{Path: routePath(d), Cold: d.Cold, Unprobed: d.Unprobed, Untokenized: d.Untokenized,
		TokenizeSource: d.Tokenize.Source, TotalBlocks: uint32(d.Blocks), PrefillWeight: rt.cfg.Choose.PrefillWeight,
		RttWeight: rt.cfg.Choose.RTTWeight, Slack: uint32(max(0, rt.cfg.Search.Slack)), MaxProbes: uint32(max(0, rt.cfg.Search.MaxProbes)),
		CellsTotal: uint32(len(d.Views))}
	if err := d.Tokenize.RemoteErr; err != nil {
		x.TokenizeError = err.Error()
	} else if err := d.Tokenize.LocalErr; err != nil {
		x.TokenizeError = err.Error()
	}
	if len(d.Order) > 0 {
		x.Cell = d.Views[d.Order[0]].ID
	}
	sc := rt.cfg.Search
	sc.PrefillWeight = rt.cfg.Choose.PrefillWeight // as decide searched
	sc.PressureWeight = rt.cfg.Choose.PressureWeight
	est := make(map[int]int, len(notes.depths))
	for _, cd := range notes.depths {
		est[cd.Cell] = cd.Depth
	}
	for _, i := range explainOrder(d) {
		if topK > 0 && len(x.Cells) == topK {
			break
		}
		x.Cells = append(x.Cells, rt.explainCell(d, &sc, i, est, notes.chosen))
	}
	return x
}

// explainOrder lists the cells as an explanation shows them: the hand-off
// order first, then the other cells in the directory's order.
func explainOrder(d *Decision) []int {
	out := make([]int, 0, len(d.Views))
	out = append(out, d.Order...)
	for i := range d.Views {
		if !slices.Contains(d.Order, i) {
			out = append(out, i)
		}
	}
	return out
}

// explainCell is cell i as decision d saw it.
func (rt *Router) explainCell(d *Decision, sc *SearchConfig, i int, est map[int]int, chosen int) *globalv1.ExplainCell {
	v := &d.Views[i]
	c := &globalv1.ExplainCell{Cell: v.ID, Usable: v.usable(), Alive: v.Alive, Draining: v.Draining,
		HasSummary: v.Summary != nil, SummaryGeneration: v.SummaryGen, SummaryAgeSeconds: v.SummaryAge.Seconds(),
		EstimatedBlocks: uint32(est[i]), Pods: uint32(max(0, v.Load.Pods)),
		ActiveBlocks: uint64(max(0, v.Load.ActiveBlocks)), LeastPodBlocks: uint64(max(0, v.Load.LeastPodBlocks))}
	g := v
	if i < len(d.gossiped) && d.gossiped[i].ID == v.ID {
		g = &d.gossiped[i]
	}
	c.GossipedActiveRequests, c.GossipedActiveBlocks = uint64(max(0, g.Load.ActiveRequests)), uint64(max(0, g.Load.ActiveBlocks))
	c.GossipedFreeBlocks, c.GossipedLeastPodBlocks = uint64(max(0, g.Load.FreeBlocks)), uint64(max(0, g.Load.LeastPodBlocks))
	c.Candidate = slices.ContainsFunc(d.Candidates, func(k Candidate) bool { return k.Cell == i })
	if c.Usable {
		c.SearchBound = searchBound(sc, v, est[i], d.Blocks)
	}
	if j := slices.IndexFunc(d.Answers, func(a ProbeAnswer) bool { return a.Cell == i }); j >= 0 {
		a := &d.Answers[j]
		c.Probed = true
		c.Probe = &globalv1.ExplainProbe{Pod: a.Pod, MatchedBlocks: uint32(max(0, a.Matched)), Load: a.Load, Cost: a.Cost,
			Busy: a.Busy, RttMs: float64(a.RTT) / 1e6, Opened: a.Opened, CellBlocks: uint64(max(0, a.CellBlocks))}
		c.DistanceMs = float64(a.Distance) / 1e6
		if a.Err != nil {
			c.Probe.Error = a.Err.Error()
		} else {
			c.PrefillCost, c.LoadCost, c.DistanceCost = chooseTerms(&rt.cfg.Choose, a, d.Blocks)
			c.Cost = c.PrefillCost + c.LoadCost + c.DistanceCost
		}
	}
	if r := slices.Index(d.Order, i); r >= 0 {
		c.Rank, c.Picked = uint32(r+1), r == 0
		switch {
		case r >= chosen:
			c.Role = roleFallback
		case len(d.Answers) > 0:
			c.Role = roleChoice
		default:
			c.Role = roleCandidate
		}
	}
	return c
}
