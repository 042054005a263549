package cell

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
)

// Route answers a routing query without sending anything or changing any
// state: every candidate pod with its matched depth, load and cost, and the
// pick. The global tier probes cells with it.
func (s *stateServer) Route(ctx context.Context, req *cellv1.RouteRequest) (*cellv1.RouteResponse, error) {
	if s.router == nil {
		return nil, status.Error(codes.Unavailable, "cell: routing not configured")
	}
	if len(req.GetTokenIds()) == 0 && req.GetPrompt() == "" {
		return nil, status.Error(codes.InvalidArgument, "cell: Route needs token_ids or a prompt")
	}
	preq := &pipeline.Request{Model: req.GetModel(), LoRA: req.GetLoraName(), TokenIDs: req.GetTokenIds(), Prompt: req.GetPrompt()}
	if len(req.GetExtraKeys()) > 0 {
		preq.CacheSalt = req.GetExtraKeys()[0]
	}
	// A caller with a key of its own gets its tenant's salt, as on the data
	// plane; a peer (the global tier's probe) sends the salt it hashed with.
	if p, _ := edge.PrincipalFrom(ctx); !p.Peer {
		salt, err := auth.Salt(p.Tenant, preq.CacheSalt)
		if err != nil {
			return nil, edge.GRPCError(err)
		}
		preq.CacheSalt = salt
	}
	d, err := s.router.decideExplained(ctx, preq, req.GetExplain())
	if err != nil {
		st, body := decideFailure(err)
		return nil, status.Error(grpcCode(st), "cell: "+body.Error.Message)
	}
	defer s.router.release(d)
	resp := s.routeResponse(d, int(req.GetMaxCandidates()))
	if req.GetExplain() {
		resp.Explanation = explainDecision(d.rc, s.ix, 0)
	}
	return resp, nil
}

func (s *stateServer) routeResponse(d *decision, max int) *cellv1.RouteResponse {
	rc := d.rc
	hashes, _ := pipeline.BlockHashes.Get(rc)
	match, _ := pipeline.Match.Get(rc)
	dec := d.plan.Single
	if d.plan.Disaggregated {
		dec = d.plan.Prefill
	}
	resp := &cellv1.RouteResponse{
		TotalBlocks: uint32(len(hashes)),
		BlockSize:   uint32(s.router.hasher.BlockSize),
		Profile:     dec.Profile,
		DecisionNs:  uint64(d.took.Nanoseconds()),
		FailedOpen:  dec.FailedOpen,
	}
	if match != nil {
		// Which part of each scored pod's match is speculative.
		var slots index.HostBitmap
		for _, i := range rc.Active() {
			if c := &rc.Candidates[i]; c.HasSlot {
				slots = slots.Set(c.Slot)
			}
		}
		s.ix.SplitLearned(hashes, match, slots)
	}
	cand := func(i int, score float64) *cellv1.Candidate {
		c := &rc.Candidates[i]
		out := &cellv1.Candidate{Pod: c.Pod, Address: c.Address, Load: float64(c.ActiveBlocks), Cost: -score,
			State: cellv1.PodState_POD_STATE_READY}
		if !c.Healthy {
			out.State = cellv1.PodState_POD_STATE_DEAD
		}
		if match != nil && c.HasSlot {
			d := match.Depth(c.Slot)
			out.MatchedBlocks = uint32(d)
			out.EvictBlocks = c.Evicts(len(hashes) - d)
			out.Approximate = match.Approximate().Has(c.Slot)
			if !out.Approximate {
				out.SpeculativeBlocks = uint32(d - match.ExactDepth(c.Slot))
			}
		}
		return out
	}
	// The ranked candidates first, then every other pod that passed the
	// filters, with its score from the same decision.
	ranked := map[int]bool{}
	for k, i := range dec.Order {
		ranked[i] = true
		resp.Candidates = append(resp.Candidates, cand(i, dec.Scores[k]))
	}
	if !d.plan.Disaggregated {
		scores := rc.Scores()
		for k, i := range rc.Active() {
			if !ranked[i] && scores != nil {
				resp.Candidates = append(resp.Candidates, cand(i, scores[k]))
			}
		}
	}
	if len(resp.Candidates) > 0 {
		resp.Pick = resp.Candidates[0]
	}
	if max > 0 && len(resp.Candidates) > max {
		resp.Candidates = resp.Candidates[:max]
	}
	for _, rj := range rc.Rejected() {
		resp.Filtered = append(resp.Filtered, &cellv1.FilteredPod{Pod: rc.Candidates[rj.Candidate].Pod, Filter: rj.Filter, Reason: rj.Reason})
	}
	return resp
}
