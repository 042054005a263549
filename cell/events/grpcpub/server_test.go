package grpcpub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"google.golang.org/protobuf/proto"
)

const (
	statusApplied   = eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED
	statusDuplicate = eventsv1.PublishStatus_PUBLISH_STATUS_DUPLICATE
	statusGap       = eventsv1.PublishStatus_PUBLISH_STATUS_GAP
	statusInvalid   = eventsv1.PublishStatus_PUBLISH_STATUS_INVALID
	statusRejected  = eventsv1.PublishStatus_PUBLISH_STATUS_REJECTED
)

// step is one request of a scripted stream and the response it must get.
type step struct {
	id    uint64
	epoch uint64
	edit  func(*eventsv1.PublishRequest) // nil keeps validRequest
	want  respSummary
}

// withEpoch returns a step of a publisher that sends epochs.
func withEpoch(epoch, id uint64, want respSummary) step {
	return step{id: id, epoch: epoch, want: want}
}

func TestServerSequencing(t *testing.T) {
	dup := func(acked int64) respSummary {
		return respSummary{Status: statusDuplicate, Acked: acked, ResendFrom: -1, Reason: ReasonDuplicate}
	}
	gap := func(acked, from int64) respSummary {
		return respSummary{Status: statusGap, Acked: acked, ResendFrom: from, Reason: ReasonGap}
	}
	tests := []struct {
		name         string
		steps        []step
		wantSeqs     []uint64 // Seq of the batches the sink got
		wantClears   []uint64 // Seq of the batches that began with an added AllBlocksCleared
		wantDropped  map[string]uint64
		wantRestarts uint64
	}{
		{
			name:     "in order",
			steps:    []step{{id: 0, want: applied(0)}, {id: 1, want: applied(1)}, {id: 2, want: applied(2)}, {id: 3, want: applied(3)}},
			wantSeqs: []uint64{0, 1, 2, 3},
		},
		{
			name:     "first id is the baseline",
			steps:    []step{{id: 41, want: applied(41)}, {id: 42, want: applied(42)}},
			wantSeqs: []uint64{41, 42},
		},
		{
			name:        "duplicate",
			steps:       []step{{id: 0, want: applied(0)}, {id: 1, want: applied(1)}, {id: 2, want: applied(2)}, {id: 1, want: dup(2)}, {id: 2, want: dup(2)}, {id: 3, want: applied(3)}},
			wantSeqs:    []uint64{0, 1, 2, 3},
			wantDropped: map[string]uint64{ReasonDuplicate: 2},
		},
		{
			name: "gap then resend",
			steps: []step{
				{id: 0, want: applied(0)}, {id: 1, want: applied(1)},
				{id: 3, want: gap(1, 2)}, {id: 4, want: gap(1, 2)},
				{id: 2, want: applied(2)}, {id: 3, want: applied(3)}, {id: 4, want: applied(4)},
			},
			wantSeqs:    []uint64{0, 1, 2, 3, 4},
			wantDropped: map[string]uint64{ReasonGap: 2},
		},
		{
			name:         "restart at event id 0",
			steps:        []step{{id: 0, want: applied(0)}, {id: 1, want: applied(1)}, {id: 2, want: applied(2)}, {id: 0, want: applied(0)}, {id: 1, want: applied(1)}},
			wantSeqs:     []uint64{0, 1, 2, 0, 1},
			wantClears:   []uint64{0},
			wantRestarts: 1,
		},
		{
			name:        "id 0 twice without epoch is a duplicate",
			steps:       []step{{id: 0, want: applied(0)}, {id: 0, want: dup(0)}, {id: 1, want: applied(1)}},
			wantSeqs:    []uint64{0, 1},
			wantDropped: map[string]uint64{ReasonDuplicate: 1},
		},
		{
			name: "same epoch id 0 is a duplicate",
			steps: []step{
				withEpoch(7, 0, applied(0)), withEpoch(7, 1, applied(1)), withEpoch(7, 0, dup(1)), withEpoch(7, 2, applied(2)),
			},
			wantSeqs:    []uint64{0, 1, 2},
			wantDropped: map[string]uint64{ReasonDuplicate: 1},
		},
		{
			name: "new epoch restarts and asks for its start",
			steps: []step{
				withEpoch(7, 0, applied(0)), withEpoch(7, 1, applied(1)), withEpoch(7, 2, applied(2)),
				withEpoch(8, 3, respSummary{Status: statusGap, Acked: -1, ResendFrom: 0, Reason: ReasonGap}),
				withEpoch(8, 0, applied(0)), withEpoch(8, 1, applied(1)), withEpoch(8, 2, applied(2)), withEpoch(8, 3, applied(3)),
			},
			wantSeqs:     []uint64{0, 1, 2, 0, 1, 2, 3},
			wantClears:   []uint64{0},
			wantDropped:  map[string]uint64{ReasonGap: 1},
			wantRestarts: 1,
		},
		{
			name: "invalid requests consume their id",
			steps: []step{
				{id: 0, want: applied(0)},
				{id: 1, edit: func(r *eventsv1.PublishRequest) { r.Events[0].GetBlockStored().BlockSize = 0 },
					want: respSummary{Status: statusInvalid, Acked: 1, ResendFrom: -1, Reason: ReasonBadBlockSize}},
				{id: 2, edit: func(r *eventsv1.PublishRequest) {
					r.Events[0].GetBlockStored().TokenIds = r.Events[0].GetBlockStored().TokenIds[:7]
				},
					want: respSummary{Status: statusInvalid, Acked: 2, ResendFrom: -1, Reason: ReasonTokenCountMismatch}},
				{id: 3, want: applied(3)},
			},
			wantSeqs:    []uint64{0, 3},
			wantDropped: map[string]uint64{ReasonBadBlockSize: 1, ReasonTokenCountMismatch: 1},
		},
		{
			name: "invalid header is not sequenced",
			steps: []step{
				{id: 0, want: applied(0)},
				{id: 1, edit: func(r *eventsv1.PublishRequest) { r.Pod = "" },
					want: respSummary{Status: statusInvalid, Acked: -1, ResendFrom: -1, Reason: ReasonEmptyPod}},
				{id: 1, edit: func(r *eventsv1.PublishRequest) { r.DpRank = proto.Int32(-2) },
					want: respSummary{Status: statusInvalid, Acked: -1, ResendFrom: -1, Reason: ReasonBadDPRank}},
				{id: 1, want: applied(1)},
			},
			wantSeqs:    []uint64{0, 1},
			wantDropped: map[string]uint64{ReasonEmptyPod: 1, ReasonBadDPRank: 1},
		},
		{
			name: "invalid first batch after a restart still clears",
			steps: []step{
				{id: 0, want: applied(0)}, {id: 1, want: applied(1)},
				{id: 0, edit: func(r *eventsv1.PublishRequest) { r.Events[1] = &eventsv1.KVEvent{} },
					want: respSummary{Status: statusInvalid, Acked: 0, ResendFrom: -1, Reason: ReasonEmptyEvent}},
				{id: 1, want: applied(1)},
			},
			wantSeqs:     []uint64{0, 1, 0, 1},
			wantClears:   []uint64{0},
			wantDropped:  map[string]uint64{ReasonEmptyEvent: 1},
			wantRestarts: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &recordingSink{}
			client, srv := startServer(t, sink, DefaultConfig())
			st := openStream(t, client)
			for i, s := range tt.steps {
				req := validRequest("pod-a", s.id)
				req.PublisherEpoch = s.epoch
				if s.edit != nil {
					s.edit(req)
				}
				resp := st.send(req)
				if got := summarize(resp); got != s.want {
					t.Fatalf("step %d (event_id %d): got %+v, want %+v (detail %q)", i, s.id, got, s.want, resp.GetDetail())
				}
				if resp.GetEventId() != s.id {
					t.Fatalf("step %d: got echoed event_id %d, want %d", i, resp.GetEventId(), s.id)
				}
			}
			st.close()

			if got := sink.seqs("pod-a"); !slices.Equal(got, tt.wantSeqs) {
				t.Errorf("sink got seqs %v, want %v", got, tt.wantSeqs)
			}
			var clears []uint64
			for _, b := range sink.all() {
				if len(b.Events) > 0 && b.Events[0].Kind == events.KindAllBlocksCleared {
					clears = append(clears, b.Seq)
				}
			}
			if !slices.Equal(clears, tt.wantClears) {
				t.Errorf("got added AllBlocksCleared before seqs %v, want %v", clears, tt.wantClears)
			}
			c := srv.Counters()
			var wantApplied uint64
			for _, s := range tt.steps {
				if s.want.Status == statusApplied {
					wantApplied++
				}
			}
			if c.AppliedBatches != wantApplied || c.AppliedEvents != 3*wantApplied {
				t.Errorf("got %d applied batches of %d events, want %d of %d", c.AppliedBatches, c.AppliedEvents, wantApplied, 3*wantApplied)
			}
			wantDropped := tt.wantDropped
			if wantDropped == nil {
				wantDropped = map[string]uint64{}
			}
			if !maps.Equal(c.Dropped, wantDropped) {
				t.Errorf("got dropped %v, want %v", c.Dropped, wantDropped)
			}
			if c.Restarts != tt.wantRestarts {
				t.Errorf("got %d restarts, want %d", c.Restarts, tt.wantRestarts)
			}
		})
	}
}

// sinkErr is a sink error with its own reason label.
type sinkErr struct{}

func (sinkErr) Error() string  { return "index: no free slot" }
func (sinkErr) Reason() string { return "no_slot" }

func TestServerSinkRejects(t *testing.T) {
	sink := &recordingSink{fail: func(b *events.Batch) error {
		switch b.Seq {
		case 1:
			return fmt.Errorf("apply: %w", sinkErr{})
		case 2:
			return errors.New("apply: something")
		}
		return nil
	}}
	client, srv := startServer(t, sink, DefaultConfig())
	st := openStream(t, client)
	want := []respSummary{
		applied(0),
		{Status: statusRejected, Acked: 1, ResendFrom: -1, Reason: "no_slot"},
		{Status: statusRejected, Acked: 2, ResendFrom: -1, Reason: ReasonSink},
		applied(3),
	}
	for id, w := range want {
		resp := st.send(validRequest("pod-a", uint64(id)))
		if got := summarize(resp); got != w {
			t.Fatalf("event_id %d: got %+v, want %+v", id, got, w)
		}
		if w.Status == statusRejected && resp.GetDetail() == "" {
			t.Errorf("event_id %d: got empty detail, want the sink's error", id)
		}
	}
	if got, want := sink.seqs("pod-a"), []uint64{0, 3}; !slices.Equal(got, want) {
		t.Errorf("sink got seqs %v, want %v", got, want)
	}
	if got, want := srv.Counters().Dropped, map[string]uint64{"no_slot": 1, ReasonSink: 1}; !maps.Equal(got, want) {
		t.Errorf("got dropped %v, want %v", got, want)
	}
}

func TestServerConvertsOverTheWire(t *testing.T) {
	sink := &recordingSink{}
	client, _ := startServer(t, sink, DefaultConfig())
	st := openStream(t, client)
	req := validRequest("pod-a", 5)
	req.DpRank = proto.Int32(2)
	if got := summarize(st.send(req)); got != applied(5) {
		t.Fatalf("got %+v, want %+v", got, applied(5))
	}
	var want events.Batch
	if err := Convert(validRequest("pod-a", 5), DefaultLimits(), &want); err != nil {
		t.Fatal(err)
	}
	want.DPRank = 2
	got := sink.all()
	if len(got) != 1 {
		t.Fatalf("sink got %d batches, want 1", len(got))
	}
	if !batchesEqual(got[0], want) {
		t.Errorf("sink got %+v, want %+v", got[0], want)
	}
	if got[0].Holder() != "pod-a#2" {
		t.Errorf("got holder %q, want %q", got[0].Holder(), "pod-a#2")
	}
}

func TestServerStateSurvivesReconnect(t *testing.T) {
	sink := &recordingSink{}
	client, _ := startServer(t, sink, DefaultConfig())
	first := openStream(t, client)
	for id := range uint64(3) {
		first.send(validRequest("pod-a", id))
	}
	first.close()
	second := openStream(t, client)
	if got, want := summarize(second.send(validRequest("pod-a", 2))), (respSummary{Status: statusDuplicate, Acked: 2, ResendFrom: -1, Reason: ReasonDuplicate}); got != want {
		t.Errorf("resent event_id 2 after reconnect: got %+v, want %+v", got, want)
	}
	if got := summarize(second.send(validRequest("pod-a", 3))); got != applied(3) {
		t.Errorf("event_id 3 after reconnect: got %+v, want %+v", got, applied(3))
	}
	second.close()
	if got, want := sink.seqs("pod-a"), []uint64{0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("sink got seqs %v, want %v", got, want)
	}
}

func TestServerMaxPublishers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxPublishers = 2
	sink := &recordingSink{}
	client, _ := startServer(t, sink, cfg)
	st := openStream(t, client)
	tooMany := respSummary{Status: statusRejected, Acked: -1, ResendFrom: -1, Reason: ReasonTooManyPublishers}
	for _, tc := range []struct {
		pod  string
		want respSummary
	}{
		{"pod-a", applied(0)},
		{"pod-b", applied(0)},
		{"pod-c", tooMany},
		{"pod-a", (respSummary{Status: statusDuplicate, Acked: 0, ResendFrom: -1, Reason: ReasonDuplicate})},
	} {
		if got := summarize(st.send(validRequest(tc.pod, 0))); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.pod, got, tc.want)
		}
	}
}

func TestServerConcurrentPublishers(t *testing.T) {
	const pubs, batches = 8, 50
	sink := &recordingSink{}
	client, srv := startServer(t, sink, DefaultConfig())
	var wg sync.WaitGroup
	errs := make(chan error, pubs)
	for p := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			st, err := client.Publish(ctx)
			if err != nil {
				errs <- err
				return
			}
			// Send everything first, then read: the server must keep order
			// with requests pipelined.
			for id := range uint64(batches) {
				if err := st.Send(validRequest(fmt.Sprintf("pod-%d", p), id)); err != nil {
					errs <- err
					return
				}
			}
			for id := range uint64(batches) {
				resp, err := st.Recv()
				if err != nil {
					errs <- err
					return
				}
				if got := summarize(resp); got != applied(int64(id)) {
					errs <- fmt.Errorf("pod-%d event_id %d: got %+v, want %+v", p, id, got, applied(int64(id)))
					return
				}
			}
			errs <- st.CloseSend()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	want := make([]uint64, batches)
	for i := range want {
		want[i] = uint64(i)
	}
	for p := range pubs {
		if got := sink.seqs(fmt.Sprintf("pod-%d", p)); !slices.Equal(got, want) {
			t.Errorf("pod-%d: sink got seqs %v, want 0..%d in order", p, got, batches-1)
		}
	}
	if got := srv.Counters().AppliedBatches; got != pubs*batches {
		t.Errorf("got %d applied batches, want %d", got, pubs*batches)
	}
}

// blockingSink blocks its first ApplyBatch until the context ends and
// accepts the others.
type blockingSink struct {
	entered chan struct{}
	calls   atomic.Int32
}

func (s *blockingSink) ApplyBatch(ctx context.Context, _ *events.Batch) error {
	if s.calls.Add(1) > 1 {
		return nil
	}
	s.entered <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

func TestServerCancelWhileApplying(t *testing.T) {
	sink := &blockingSink{entered: make(chan struct{}, 1)}
	client, srv := startServer(t, sink, DefaultConfig())
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	streamCtx, stop := context.WithCancel(ctx)
	st, err := client.Publish(streamCtx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(validRequest("pod-a", 0)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.entered:
	case <-ctx.Done():
		t.Fatal("sink never got the batch")
	}
	stop()
	if _, err := st.Recv(); err == nil {
		t.Fatal("Recv after cancel: got a response, want an error")
	}
	// The cancelled batch was not processed: a new stream's event_id 0 is
	// still the baseline, not a duplicate. (The new stream waits for the
	// cancelled handler to let go of the publisher.)
	st2 := openStream(t, client)
	if got := summarize(st2.send(validRequest("pod-a", 0))); got != applied(0) {
		t.Errorf("event_id 0 after a cancelled apply: got %+v, want %+v", got, applied(0))
	}
	if got := srv.Counters(); got.AppliedBatches != 1 || got.DroppedTotal() != 0 {
		t.Errorf("got %d applied and %d dropped, want 1 and 0", got.AppliedBatches, got.DroppedTotal())
	}
}

// batchesEqual compares two batches field by field, treating nil and empty
// slices alike.
func batchesEqual(a, b events.Batch) bool {
	if a.Pod != b.Pod || a.Model != b.Model || a.DPRank != b.DPRank || a.Seq != b.Seq || a.TS != b.TS || len(a.Events) != len(b.Events) {
		return false
	}
	for i := range a.Events {
		x, y := a.Events[i], b.Events[i]
		if x.Kind != y.Kind || x.ParentHash != y.ParentHash || x.HasParent != y.HasParent || x.BlockSize != y.BlockSize ||
			x.LoRAName != y.LoRAName || x.Medium != y.Medium || x.GroupIdx != y.GroupIdx || x.SlidingWindow != y.SlidingWindow ||
			!slices.Equal(x.BlockHashes, y.BlockHashes) || !slices.Equal(x.TokenIDs, y.TokenIDs) || !reflect.DeepEqual(x.ExtraKeys, y.ExtraKeys) {
			return false
		}
	}
	return true
}
