package cell

import (
	"cmp"
	"slices"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// Filter verdicts of an explained pod (ExplainPod.verdict).
const (
	verdictKept           = "kept"
	verdictFiltered       = "filtered"
	verdictKeptFailedOpen = "kept_failed_open"
)

// loadFilters are the filters whose verdict marks a pod busy: the soft
// load thresholds.
var loadFilters = map[string]bool{"busy": true, "concurrency": true}

// explainDecision builds the explanation of a decision recorded with
// Context.SetExplain: every candidate of every selector pass with what
// Filter, Score and Pick saw and decided, from the decision's own slices
// (pipeline.Explain) and the same candidates, prefix match and block chain
// the scorers read. topK > 0 keeps only the best ranked topK pods of each
// pass (the decision ring's records); 0 keeps them all (a dry run). It
// returns nil when the decision was not explained.
//
// It asks the index where each kept pod's exact match ends (SplitLearned,
// as the route response and the match-source metric do): that changes no
// routing state, only the match's answer buffer.
func explainDecision(rc *pipeline.Context, ix *index.Index, topK int) *cellv1.Explanation {
	x := rc.Explained()
	if x == nil {
		return nil
	}
	hashes, _ := pipeline.BlockHashes.Get(rc)
	match, _ := pipeline.Match.Get(rc)
	out := &cellv1.Explanation{TotalBlocks: uint32(len(hashes))}
	var slots index.HostBitmap
	var pods []*cellv1.ExplainPod
	var podCand []int // candidate index of each of pods
	for pi := range x.Passes {
		ps := &x.Passes[pi]
		ep := &cellv1.ExplainPass{Profile: ps.Profile, Phase: ps.Phase.String(), Picker: ps.Picker, FailedOpen: ps.FailedOpen,
			PodsTotal: uint32(len(rc.Candidates))}
		for _, sw := range ps.Scorers {
			ep.Scorers = append(ep.Scorers, &cellv1.ExplainScorer{Type: sw.Type, Weight: sw.Weight})
		}
		for _, i := range passOrder(ps, len(rc.Candidates)) {
			if topK > 0 && len(ep.Pods) == topK {
				break
			}
			p := explainPod(rc, ps, i, len(hashes), match)
			if c := &rc.Candidates[i]; c.HasSlot {
				slots = slots.Set(c.Slot)
			}
			ep.Pods = append(ep.Pods, p)
			pods, podCand = append(pods, p), append(podCand, i)
		}
		out.Passes = append(out.Passes, ep)
		if len(ps.Order) > 0 {
			out.Pick = rc.Candidates[ps.Order[0]].Pod
		}
	}
	// Which part of each explained pod's match is speculative.
	if match != nil && !slots.IsEmpty() {
		ix.SplitLearned(hashes, match, slots)
		for k, p := range pods {
			c := &rc.Candidates[podCand[k]]
			if p.Approximate || !c.HasSlot {
				continue
			}
			p.SpeculativeBlocks = uint32(match.Depth(c.Slot) - match.ExactDepth(c.Slot))
		}
	}
	return out
}

// passOrder lists the candidates of a pass as an explanation shows them:
// the ranked ones by rank, the other scored ones by score (ties by index),
// then the filtered ones in the order the filters dropped them.
func passOrder(ps *pipeline.PassExplain, n int) []int {
	out := make([]int, 0, n)
	seen := make([]bool, n)
	for _, i := range ps.Order {
		out, seen[i] = append(out, i), true
	}
	type scored struct {
		i int
		s float64
	}
	var rest []scored
	for k, i := range ps.Active {
		if !seen[i] && k < len(ps.Total) {
			rest = append(rest, scored{i, ps.Total[k]})
		}
	}
	slices.SortFunc(rest, func(a, b scored) int {
		if c := cmp.Compare(b.s, a.s); c != 0 {
			return c
		}
		return a.i - b.i
	})
	for _, r := range rest {
		out, seen[r.i] = append(out, r.i), true
	}
	for _, rj := range ps.Rejected {
		if !seen[rj.Candidate] {
			out, seen[rj.Candidate] = append(out, rj.Candidate), true
		}
	}
	return out
}

// explainPod is candidate i as pass ps saw it.
func explainPod(rc *pipeline.Context, ps *pipeline.PassExplain, i, total int, match *index.MatchResult) *cellv1.ExplainPod {
	c := &rc.Candidates[i]
	p := &cellv1.ExplainPod{Pod: c.Pod, Holder: c.Holder, Address: c.Address, Verdict: verdictKept,
		ActiveRequests: uint32(max(0, c.ActiveRequests)), ActiveBlocks: uint32(max(0, c.ActiveBlocks)),
		PrefillingBlocks: uint32(max(0, c.PrefillBlocks)), KvBlocks: uint32(max(0, c.TotalBlocks)),
		Healthy: c.Healthy, Draining: c.Draining, Role: c.Role.String()}
	depth := 0
	if match != nil && c.HasSlot {
		depth = match.Depth(c.Slot)
		p.Approximate = match.Approximate().Has(c.Slot)
	}
	p.MatchedBlocks, p.PrefillBlocks = uint32(depth), uint32(max(0, total-depth))
	for _, rj := range ps.Rejected {
		if rj.Candidate == i {
			p.Verdict, p.Filter, p.Reason = verdictFiltered, rj.Filter, rj.Reason
			p.Busy = loadFilters[rj.Filter]
			return p
		}
	}
	for _, rj := range ps.SoftRejected {
		if rj.Candidate == i {
			p.Verdict, p.Filter, p.Reason = verdictKeptFailedOpen, rj.Filter, rj.Reason
			p.Busy = loadFilters[rj.Filter]
			break
		}
	}
	k := slices.Index(ps.Active, i)
	if k < 0 {
		return p
	}
	for s, sw := range ps.Scorers {
		if k < len(ps.Raw[s]) {
			p.Scores = append(p.Scores, &cellv1.ExplainScore{Type: sw.Type, Raw: ps.Raw[s][k]})
		}
	}
	if k < len(ps.Total) {
		p.Score = ps.Total[k]
	}
	if r := slices.Index(ps.Order, i); r >= 0 {
		p.Rank, p.Picked = uint32(r+1), r == 0
	}
	return p
}
