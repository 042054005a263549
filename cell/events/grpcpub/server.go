package grpcpub

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Server implements eventsv1.EventPublisherServer on top of an events.Sink.
// Register it with eventsv1.RegisterEventPublisherServer. It is safe for any
// number of concurrent streams.
type Server struct {
	eventsv1.UnimplementedEventPublisherServer

	sink      events.Sink
	lim       Limits
	max       int
	seq       Sequencer
	stats     counters
	authorize func(ctx context.Context, pod string) error
	admits    func(pod string) bool
	rl        rateLog

	mu   sync.Mutex
	pubs map[string]*sync.Mutex
}

var _ eventsv1.EventPublisherServer = (*Server)(nil)

// NewServer returns a Server that feeds sink, or an error when cfg is not
// valid.
func NewServer(sink events.Sink, cfg Config) (*Server, error) {
	if sink == nil {
		return nil, errors.New("grpcpub: nil sink")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	seq := cfg.Sequencer
	if seq == nil {
		seq = NewMemSequencer()
	}
	return &Server{sink: sink, lim: cfg.Limits, max: cfg.MaxPublishers, seq: seq, pubs: make(map[string]*sync.Mutex),
		authorize: cfg.Authorize, admits: cfg.Admits, rl: rateLog{log: cfg.Logger, every: cfg.LogEvery}}, nil
}

// Counters returns a snapshot of the server's counters.
func (s *Server) Counters() Counters { return s.stats.snapshot() }

// Publish implements eventsv1.EventPublisherServer: it answers every
// request with one response, in order, until the client closes its side
// (then it returns nil), the stream breaks, or the stream's context ends
// while the sink works on a batch.
func (s *Server) Publish(stream grpc.BidiStreamingServer[eventsv1.PublishRequest, eventsv1.PublishResponse]) error {
	ctx := stream.Context()
	var batch events.Batch
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp, err := s.Handle(ctx, req, &batch)
		if err != nil {
			return err
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// Handle processes one request and returns its response; Publish calls it
// for each request of a stream. batch is scratch space reused between
// calls of one goroutine. It returns an error only when the caller may not
// publish for the request's pod (a gRPC PermissionDenied status, which
// ends the stream), or when ctx ended while the sink was applying the
// batch; the batch then counts as not processed.
func (s *Server) Handle(ctx context.Context, req *eventsv1.PublishRequest, batch *events.Batch) (*eventsv1.PublishResponse, error) {
	id := req.GetEventId()
	resp := &eventsv1.PublishResponse{EventId: id}
	if err := ValidateHeader(req, s.lim); err != nil {
		return s.dropped(resp, eventsv1.PublishStatus_PUBLISH_STATUS_INVALID, err), nil
	}
	if s.authorize != nil {
		if err := s.authorize(ctx, req.GetPod()); err != nil {
			s.stats.drop(ReasonForbiddenPod)
			s.rl.warn("grpcpub: refused a publisher for a pod its key or certificate does not name", "pod", req.GetPod(), "err", err)
			return nil, status.Error(codes.PermissionDenied, "grpcpub: may not publish for pod "+quote(req.GetPod())+": "+err.Error())
		}
	}
	if s.admits != nil && !s.admits(req.GetPod()) {
		s.rl.warn("grpcpub: rejected events of a pod that is not configured", "pod", req.GetPod())
		return s.dropped(resp, eventsv1.PublishStatus_PUBLISH_STATUS_REJECTED, errUnknownPod), nil
	}
	header(req, batch)
	pub := batch.Holder()
	mu := s.lock(pub)
	if mu == nil {
		return s.dropped(resp, eventsv1.PublishStatus_PUBLISH_STATUS_REJECTED, errTooManyPublishers), nil
	}
	defer mu.Unlock()

	epoch := req.GetPublisherEpoch()
	v := s.seq.Check(pub, epoch, id)
	if v.HasAcked {
		resp.AckedEventId = &v.Acked
	}
	switch v.Action {
	case SeqDuplicate:
		resp.Status = eventsv1.PublishStatus_PUBLISH_STATUS_DUPLICATE
		resp.Reason = ReasonDuplicate
		s.stats.drop(ReasonDuplicate)
		return resp, nil
	case SeqGap:
		resp.Status = eventsv1.PublishStatus_PUBLISH_STATUS_GAP
		resp.Reason = ReasonGap
		resp.ResendFrom = &v.ResendFrom
		s.stats.drop(ReasonGap)
		return resp, nil
	}
	if v.ClearFirst {
		s.stats.restarts.Add(1)
	}

	status := eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED
	verr := validateEvents(req, s.lim)
	switch {
	case verr != nil && v.ClearFirst:
		// The restart still happened: clear what the old run reported.
		clearOnly(req, batch)
		if err := s.sink.ApplyBatch(ctx, batch); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		status = eventsv1.PublishStatus_PUBLISH_STATUS_INVALID
	case verr != nil:
		status = eventsv1.PublishStatus_PUBLISH_STATUS_INVALID
	default:
		fill(req, batch, v.ClearFirst)
		if err := s.sink.ApplyBatch(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			status, verr = eventsv1.PublishStatus_PUBLISH_STATUS_REJECTED, err
		}
	}
	s.seq.Commit(pub, epoch, id)
	resp.AckedEventId = &id
	if verr != nil {
		return s.dropped(resp, status, verr), nil
	}
	resp.Status = status
	s.stats.appliedBatches.Add(1)
	s.stats.appliedEvents.Add(uint64(len(req.GetEvents())))
	return resp, nil
}

// errTooManyPublishers is the drop error for a publisher over
// Config.MaxPublishers.
var errTooManyPublishers = &rejectError{reason: ReasonTooManyPublishers, msg: "grpcpub: too many publishers"}

// errUnknownPod is the drop error for a pod Config.Admits refuses.
var errUnknownPod = &rejectError{reason: ReasonUnknownPod, msg: "grpcpub: the pod is not configured at this cell"}

// quote quotes a pod name for a message, cut to 128 bytes.
func quote(pod string) string {
	if len(pod) > 128 {
		pod = pod[:128]
	}
	return strconv.Quote(pod)
}

// rejectError is a drop error of the server's own that is not a validation
// failure.
type rejectError struct{ reason, msg string }

// Error returns the message.
func (e *rejectError) Error() string { return e.msg }

// Reason returns the metric label.
func (e *rejectError) Reason() string { return e.reason }

// dropped fills resp for a dropped request and counts it.
func (s *Server) dropped(resp *eventsv1.PublishResponse, status eventsv1.PublishStatus, err error) *eventsv1.PublishResponse {
	reason := ReasonOf(err)
	s.stats.drop(reason)
	resp.Status = status
	resp.Reason = reason
	resp.Detail = err.Error()
	return resp
}

// lock locks and returns the mutex that serialises pub's batches, creating
// it for a new publisher, or returns nil when pub is new and the server
// already tracks MaxPublishers.
func (s *Server) lock(pub string) *sync.Mutex {
	s.mu.Lock()
	mu, ok := s.pubs[pub]
	if !ok {
		if len(s.pubs) >= s.max {
			s.mu.Unlock()
			return nil
		}
		mu = new(sync.Mutex)
		s.pubs[pub] = mu
	}
	s.mu.Unlock()
	mu.Lock()
	return mu
}
