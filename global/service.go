package global

import (
	"context"
	"errors"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
)

// service serves GlobalService.
type service struct {
	globalv1.UnimplementedGlobalServiceServer
	rt *Router
	g  *Global // the data plane, for Complete
}

var _ globalv1.GlobalServiceServer = (*service)(nil)

// Route answers where a request would go without sending it.
func (s *service) Route(ctx context.Context, req *globalv1.RouteRequest) (*globalv1.RouteResponse, error) {
	if len(req.GetTokenIds()) == 0 && req.GetPrompt() == "" && len(req.GetMessages()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "global: Route needs token_ids, a prompt or messages")
	}
	salt, err := tenantSalt(ctx, req.GetCacheSalt())
	if err != nil {
		return nil, edge.GRPCError(err)
	}
	r := &Request{Model: req.GetModel(), CacheSalt: salt, TokenIDs: req.GetTokenIds(), Prompt: req.GetPrompt()}
	// The dry run weighs the cells' waits for the caller's tenant's band,
	// as its request on the data plane would be (standard without one).
	p, _ := edge.PrincipalFrom(ctx)
	band, _ := p.RequestPriority("")
	r.Band = gossip.BandOf(band)
	if msgs := req.GetMessages(); len(msgs) > 0 {
		r.Chat, r.TokenIDs, r.Prompt = true, nil, ""
		r.Messages = make([]tokenizer.Message, len(msgs))
		for i, m := range msgs {
			r.Messages[i] = tokenizer.Message{Role: m.GetRole(), Content: m.GetContent()}
		}
	}
	var notes *explainNotes
	if req.GetExplain() {
		notes = &explainNotes{}
	}
	d, err := s.rt.decide(ctx, r, true, notes)
	if errors.Is(err, ErrNoCell) {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	if errors.Is(err, openai.ErrPromptTooLong) {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	resp := routeResponse(d)
	resp.Explanation = s.rt.explain(d, notes, 0) // nil unless asked for
	return resp, nil
}

// tenantSalt is the cache salt a dry run hashes with: the caller's
// tenant's, as its request on the data plane would be (edge.Salt).
func tenantSalt(ctx context.Context, client string) (string, error) {
	p, _ := edge.PrincipalFrom(ctx)
	if p.Peer {
		return client, nil
	}
	return auth.Salt(p.Tenant, client)
}

func routeResponse(d *Decision) *globalv1.RouteResponse {
	resp := &globalv1.RouteResponse{TotalBlocks: uint32(d.Blocks), ColdPath: d.Cold, DecisionNs: uint64(d.Took.Nanoseconds()),
		Probes: uint32(len(d.Answers))}
	if len(d.Order) > 0 {
		resp.Cell = d.Views[d.Order[0]].ID
	}
	answer := map[int]ProbeAnswer{}
	for _, a := range d.Answers {
		answer[a.Cell] = a
	}
	for _, c := range d.Candidates {
		cc := &globalv1.CellCandidate{Cell: d.Views[c.Cell].ID, EstimatedBlocks: uint32(c.Estimated)}
		if a, ok := answer[c.Cell]; ok {
			cc.Probed = true
			cc.MatchedBlocks, cc.Pod, cc.Load, cc.Cost = uint32(a.Matched), a.Pod, a.Load, a.Cost
			cc.RttMs = float64(a.RTT) / 1e6
			if a.Err != nil {
				cc.Error = a.Err.Error()
			}
		}
		resp.Candidates = append(resp.Candidates, cc)
	}
	return resp
}

func cellInfo(v *CellView) *globalv1.CellInfo {
	state := "alive"
	if !v.Alive {
		state = "dead"
	}
	return &globalv1.CellInfo{Id: v.ID, HttpAddr: v.HTTPAddr, GrpcAddr: v.GRPCAddr, State: state, Draining: v.Draining,
		SummaryGeneration: v.SummaryGen, SummaryAgeSeconds: v.SummaryAge.Seconds(), SummaryBytes: uint64(v.SummaryBytes),
		ActiveRequests: uint64(v.Load.ActiveRequests), ActiveBlocks: uint64(v.Load.ActiveBlocks), FreeBlocks: uint64(v.Load.FreeBlocks),
		Pods: uint32(v.Load.Pods), Endpoints: endpointInfos(v)}
}

// endpointInfos lists the cell's live replicas (a static cell: its one
// address).
func endpointInfos(v *CellView) []*globalv1.CellEndpoint {
	eps := v.endpoints()
	out := make([]*globalv1.CellEndpoint, len(eps))
	for i, e := range eps {
		out[i] = &globalv1.CellEndpoint{Name: e.Name, HttpAddr: e.HTTPAddr, GrpcAddr: e.GRPCAddr, GatewayAddr: e.GatewayAddr}
	}
	return out
}

// ListCells lists the known cells.
func (s *service) ListCells(context.Context, *globalv1.ListCellsRequest) (*globalv1.ListCellsResponse, error) {
	resp := &globalv1.ListCellsResponse{}
	views := s.rt.views()
	sort.Slice(views, func(a, b int) bool { return views[a].ID < views[b].ID })
	for i := range views {
		resp.Cells = append(resp.Cells, cellInfo(&views[i]))
	}
	return resp, nil
}

// DrainCell stops (or, with cancel, resumes) sending new requests to a cell,
// at this replica and, through the pool, at its peer replicas.
func (s *service) DrainCell(_ context.Context, req *globalv1.DrainCellRequest) (*globalv1.DrainCellResponse, error) {
	if req.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "global: DrainCell needs a cell id")
	}
	views := s.rt.views()
	for i := range views {
		if views[i].ID == req.GetId() {
			changed := s.rt.SetDraining(req.GetId(), !req.GetCancel())
			views[i].Draining = !req.GetCancel()
			if s.g != nil && s.g.shareDrain != nil {
				// Sent even when nothing changed here: a peer may have missed it.
				s.g.shareDrain(req.GetId(), req.GetCancel())
			}
			return &globalv1.DrainCellResponse{Cell: cellInfo(&views[i]), Changed: changed}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "global: no cell %q", req.GetId())
}
