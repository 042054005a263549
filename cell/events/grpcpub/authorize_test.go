package grpcpub

import (
	"context"
	"errors"
	"testing"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type callerKey struct{}

// TestAuthorizeAndAdmits checks the two pod checks of Handle: a pod the
// caller may not publish for ends the stream with PermissionDenied and is
// counted; a pod the sink does not admit is rejected before it takes a
// publisher slot; neither reaches the sink.
func TestAuthorizeAndAdmits(t *testing.T) {
	sink := &recordingSink{}
	cfg := DefaultConfig()
	cfg.MaxPublishers = 1
	cfg.Authorize = func(ctx context.Context, pod string) error {
		if ctx.Value(callerKey{}) == pod {
			return nil
		}
		return errors.New("not this caller's pod")
	}
	cfg.Admits = func(pod string) bool { return pod != "ghost" }
	s, err := NewServer(sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b events.Batch
	as := func(caller string) context.Context {
		return context.WithValue(context.Background(), callerKey{}, caller)
	}

	_, err = s.Handle(as("pod-a"), validRequest("pod-b", 0), &b)
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("another caller's pod: got %v, want PermissionDenied", err)
	}
	for range 3 {
		resp, err := s.Handle(as("ghost"), validRequest("ghost", 0), &b)
		if err != nil || resp.GetStatus() != eventsv1.PublishStatus_PUBLISH_STATUS_REJECTED || resp.GetReason() != ReasonUnknownPod {
			t.Fatalf("unknown pod: got %v %v, want REJECTED unknown_pod", resp, err)
		}
	}
	// The one publisher slot is still free for a real pod.
	resp, err := s.Handle(as("pod-a"), validRequest("pod-a", 0), &b)
	if err != nil || resp.GetStatus() != eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED {
		t.Fatalf("own pod: got %v %v, want APPLIED", resp, err)
	}
	if got := len(sink.all()); got != 1 {
		t.Errorf("the sink got %d batches, want 1 (pod-a's)", got)
	}
	c := s.Counters()
	if c.Dropped[ReasonForbiddenPod] != 1 || c.Dropped[ReasonUnknownPod] != 3 {
		t.Errorf("got drops %v, want forbidden_pod 1, unknown_pod 3", c.Dropped)
	}
}
