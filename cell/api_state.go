package cell

import (
	"context"
	"io"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/podset"
	"github.com/cellrouter/cellrouter/cell/snapshot"
)

// stateServer serves CellService: the cell's pods and state, and draining.
type stateServer struct {
	cellv1.UnimplementedCellServiceServer

	cellID  string
	ix      *index.Index
	reg     *events.Registry
	applier *events.Applier
	now     func() time.Time

	router *router // set once the router is built; nil in state-only tests
	// engines is the engine metrics scraper; nil when disabled.
	engines *engineScraper
	// pods is the live pod set, for the pods it refused; nil in
	// state-only tests.
	pods *podset.Set
	// transportDrops returns the transports' drops before the applier, by
	// "<transport>/<reason>"; nil in state-only tests.
	transportDrops func() map[string]uint64

	// share sends a drain on to the peer replicas; nil without replicas.
	share func(ctx context.Context, pod string, cancel bool)

	mu       sync.Mutex
	draining map[string]bool

	// snapshot writes a snapshot of the cell to w (StreamSnapshot); nil
	// in state-only tests.
	snapshot func(w io.Writer) (snapshot.WriteStats, error)
}

var _ cellv1.CellServiceServer = (*stateServer)(nil)

func newStateServer(cellID string, ix *index.Index, reg *events.Registry, a *events.Applier) *stateServer {
	return &stateServer{cellID: cellID, ix: ix, reg: reg, applier: a, now: time.Now, draining: map[string]bool{}}
}

func podState(s events.PodState) cellv1.PodState {
	switch s {
	case events.StateReady:
		return cellv1.PodState_POD_STATE_READY
	case events.StateDegraded:
		return cellv1.PodState_POD_STATE_DEGRADED
	case events.StateDead:
		return cellv1.PodState_POD_STATE_DEAD
	}
	return cellv1.PodState_POD_STATE_UNKNOWN
}

func podRole(r events.Role) cellv1.PodRole {
	switch r {
	case events.RolePrefill:
		return cellv1.PodRole_POD_ROLE_PREFILL
	case events.RoleDecode:
		return cellv1.PodRole_POD_ROLE_DECODE
	case events.RoleBoth:
		return cellv1.PodRole_POD_ROLE_AGGREGATED
	}
	return cellv1.PodRole_POD_ROLE_UNSPECIFIED
}

// podInfoState is a pod's state as the API reports it: a pod that
// publishes events but is not configured (no address: never routed to) is
// UNCONFIGURED whatever its events say, so that pods_by_state's READY
// counts only pods that can take requests.
func podInfoState(p events.PodInfo) cellv1.PodState {
	if !p.Static && p.Address == "" && p.State != events.StateDead {
		return cellv1.PodState_POD_STATE_UNCONFIGURED
	}
	return podState(p.State)
}

func (s *stateServer) podProto(p events.PodInfo) *cellv1.Pod {
	out := &cellv1.Pod{
		Id:      p.ID,
		Address: p.Address,
		Role:    podRole(p.Role),
		State:   podInfoState(p),
	}
	if !p.LastEvent.IsZero() {
		out.LastEventUnixMs = p.LastEvent.UnixMilli()
	}
	for _, h := range p.Holders {
		out.Slots = append(out.Slots, uint32(h.Slot))
		out.LastSeq = max(out.LastSeq, h.LastSeq)
		out.EngineBlocks += uint64(s.applier.TrackedBlocks(h.ID))
		out.IndexedRouterBlocks += uint64(s.applier.IndexedBlocks(h.ID))
	}
	out.Blocks = out.EngineBlocks //nolint:staticcheck // the old name, kept for existing clients
	s.mu.Lock()
	out.Draining = s.draining[p.ID]
	s.mu.Unlock()
	return out
}

// ListPods lists the cell's pods, optionally only those in one state.
func (s *stateServer) ListPods(_ context.Context, req *cellv1.ListPodsRequest) (*cellv1.ListPodsResponse, error) {
	resp := &cellv1.ListPodsResponse{}
	for _, p := range s.reg.Snapshot() {
		pp := s.podProto(p)
		if req.GetState() != cellv1.PodState_POD_STATE_UNKNOWN && pp.State != req.GetState() {
			continue
		}
		resp.Pods = append(resp.Pods, pp)
	}
	return resp, nil
}

// GetCellState summarises the cell.
func (s *stateServer) GetCellState(context.Context, *cellv1.GetCellStateRequest) (*cellv1.CellState, error) {
	counts := map[cellv1.PodState]uint32{}
	for _, p := range s.reg.Snapshot() {
		counts[podInfoState(p)]++
	}
	routerBlocks := uint64(s.ix.Stats().Blocks)
	st := &cellv1.CellState{
		CellId:                s.cellID,
		IndexedRouterBlocks:   routerBlocks,
		IndexedBlocks:         routerBlocks, // the old name, kept for existing clients
		EventsDroppedByReason: map[string]uint64{},
		GeneratedUnixMs:       s.now().UnixMilli(),
	}
	states := make([]cellv1.PodState, 0, len(counts))
	for k := range counts {
		states = append(states, k)
	}
	sort.Slice(states, func(i, j int) bool { return states[i] < states[j] })
	for _, k := range states {
		st.PodsByState = append(st.PodsByState, &cellv1.PodStateCount{State: k, Count: counts[k]})
	}
	if s.pods != nil {
		for _, r := range s.pods.Load().Refused {
			st.RefusedPods = append(st.RefusedPods, &cellv1.RefusedPod{Id: r.ID, Source: r.Source, Reason: r.Reason})
		}
	}
	ct := s.applier.Counters()
	for k := range ct.Events {
		st.EventsApplied += ct.Events[k].Load()
	}
	for _, r := range events.DropReasons() {
		n := ct.BatchesDropped[r].Load() + ct.EventsDropped[r].Load()
		if r == events.ReasonDuplicate {
			st.DuplicatesIgnored = n // harmless: the index has them
			continue
		}
		st.EventsDropped += n
		if n > 0 {
			st.EventsDroppedByReason[r.String()] = n
		}
	}
	st.BlocksEvictedByReason = map[string]uint64{}
	for _, r := range events.EvictReasons() {
		if n := ct.Evicted[r].Load(); n > 0 {
			st.BlocksEvicted += n
			st.BlocksEvictedByReason[r.String()] = n
		}
	}
	st.BlocksEvictedByPod = map[string]uint64{}
	for _, pe := range s.applier.EvictionsByPod() {
		for _, r := range events.EvictReasons() {
			if n := pe.Evicted[r]; n > 0 {
				st.BlocksEvictedByPod[pe.Pod+"/"+r.String()] = n
			}
		}
	}
	st.EngineMetricsStale, st.EngineLoad = engineLoadProto(s.engines)
	if s.transportDrops != nil {
		st.TransportDroppedByReason = s.transportDrops()
		for _, n := range st.TransportDroppedByReason {
			st.TransportDropped += n
		}
	}
	return st, nil
}

// DrainPod marks a pod draining (or undraining with cancel). Routing skips
// draining pods; their cache stays indexed until they stop.
func (s *stateServer) DrainPod(ctx context.Context, req *cellv1.DrainPodRequest) (*cellv1.DrainPodResponse, error) {
	if req.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "cell: DrainPod needs a pod id")
	}
	var info *events.PodInfo
	for _, p := range s.reg.Snapshot() {
		if p.ID == req.GetId() {
			info = &p
			break
		}
	}
	if info == nil {
		return nil, status.Errorf(codes.NotFound, "cell: no pod %q", req.GetId())
	}
	changed := s.setDraining(req.GetId(), !req.GetCancel())
	if s.share != nil {
		// Sent even when nothing changed here: a peer may have missed it.
		s.share(ctx, req.GetId(), req.GetCancel())
	}
	return &cellv1.DrainPodResponse{Pod: s.podProto(*info), Changed: changed}, nil
}

// setDraining marks a pod draining or not and reports whether that changed.
func (s *stateServer) setDraining(pod string, on bool) bool {
	s.mu.Lock()
	was := s.draining[pod]
	if on {
		s.draining[pod] = true
	} else {
		delete(s.draining, pod)
	}
	s.mu.Unlock()
	if was != on && s.router != nil {
		s.router.invalidate()
	}
	return was != on
}

// Draining reports whether a pod is draining.
func (s *stateServer) Draining(pod string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining[pod]
}
