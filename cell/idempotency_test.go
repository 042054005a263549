package cell

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/eventlog"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/cell/index"
)

// The recorded log was made from the trace replay's engine model with
//
//	go run ./cmd/loadtest eventlog --trace testdata/mooncake_small.jsonl \
//	  --max-requests 30 --pods 3 --blocks-per-pod 300 --out cell/testdata/mooncake_events.crkvlog
//
// (3 pods, stores with token ids and parents, and evictions).
const recordedLog = "testdata/mooncake_events.crkvlog"

func loadLog(t *testing.T) []eventlog.Record {
	t.Helper()
	f, err := os.Open(recordedLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := eventlog.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func decodeRecord(t *testing.T, r eventlog.Record) *events.Batch {
	t.Helper()
	b := &events.Batch{}
	if err := vllmwire.DecodePayload(r.Payload, b, vllmwire.DefaultLimits()); err != nil {
		t.Fatalf("record %s/%d: %v", r.Pod, r.Seq, err)
	}
	b.Pod, b.Model, b.Seq = r.Pod, r.Model, r.Seq
	return b
}

// canonical is an index's content with slots replaced by pod ids, so two
// indexes that gave their pods different slots compare equal.
func canonical(ix *index.Index) []string {
	var out []string
	for _, e := range ix.Dump() {
		var pods []string
		e.Holders.ForEach(func(s index.Slot) { pods = append(pods, ix.PodID(s)) })
		sort.Strings(pods)
		out = append(out, fmt.Sprintf("%016x %v", uint64(e.Hash), pods))
	}
	return out
}

func equalDumps(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d blocks, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: entry %d = %s, want %s", what, i, got[i], want[i])
		}
	}
}

func newApplierIndex(t *testing.T, cfg Config) (*events.Applier, *index.Index) {
	t.Helper()
	ix, err := index.New(cfg.indexConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	a, err := events.NewApplier(cfg.eventsConfig(), ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a, ix
}

// TestRecordedLogIdempotent applies the recorded log once, twice (every
// batch delivered twice in a row, then the whole log again) and through two
// transports at the same time (ZMQ and gRPC Publish into one running cell),
// and checks that all three give the identical index.
func TestRecordedLogIdempotent(t *testing.T) {
	recs := loadLog(t)
	cfg := testConfig()
	cfg.Events.AcceptUnknownPods = true // the log's publishers are its pods
	ctx := context.Background()

	once, onceIx := newApplierIndex(t, cfg)
	for _, r := range recs {
		if err := once.ApplyBatch(ctx, decodeRecord(t, r)); err != nil {
			t.Fatalf("once: %v", err)
		}
	}
	want := canonical(onceIx)
	if len(want) == 0 {
		t.Fatal("the recorded log built an empty index")
	}

	twice, twiceIx := newApplierIndex(t, cfg)
	for pass := 0; pass < 2; pass++ {
		for _, r := range recs {
			for k := 0; k < 2; k++ {
				err := twice.ApplyBatch(ctx, decodeRecord(t, r))
				if r, ok := events.ReasonOf(err); err != nil && !(ok && r == events.ReasonDuplicate) {
					t.Fatalf("twice: %v", err)
				}
			}
		}
	}
	equalDumps(t, "applied twice", canonical(twiceIx), want)

	// Two transports at once: every pod publishes the whole log over ZMQ
	// (the cell dials it) while a sidecar streams the same batches over gRPC.
	pods := map[string][]eventlog.Record{}
	protos := map[string][]*eventsv1.PublishRequest{} // decoded here: t.Fatal only on the test goroutine
	var order []string
	for _, r := range recs {
		if pods[r.Pod] == nil {
			order = append(order, r.Pod)
		}
		pods[r.Pod] = append(pods[r.Pod], r)
		protos[r.Pod] = append(protos[r.Pod], toProto(decodeRecord(t, r)))
	}
	pubs := map[string]*vllmpub.Publisher{}
	for _, pod := range order {
		p, err := vllmpub.New(vllmpub.DefaultConfig(pod, recs[0].Model))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		pubs[pod] = p
		cfg.Pods = append(cfg.Pods, PodConfig{ID: pod, ZMQEndpoint: p.Endpoint(), ReplayEndpoint: p.ReplayEndpoint()})
	}
	cfg.Events.DefaultModel = recs[0].Model
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	waitFor(t, "readyz", func() bool { code, _ := get(t, base+"/readyz"); return code == 200 })

	conn, err := grpc.NewClient(c.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(order))
	for _, pod := range order {
		wg.Add(2)
		go func(pod string) { // ZMQ
			defer wg.Done()
			p := pubs[pod]
			for deadline := time.Now().Add(20 * time.Second); !p.Subscribed(); {
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("%s: never subscribed", pod)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			for _, r := range pods[pod] {
				if _, err := p.PublishPayload(r.Payload); err != nil {
					errs <- err
					return
				}
			}
		}(pod)
		go func(pod string) { // gRPC
			defer wg.Done()
			stream, err := eventsv1.NewEventPublisherClient(conn).Publish(ctx)
			if err != nil {
				errs <- err
				return
			}
			for _, req := range protos[pod] {
				if err := stream.Send(req); err != nil {
					errs <- err
					return
				}
				if _, err := stream.Recv(); err != nil {
					errs <- err
					return
				}
			}
			errs <- stream.CloseSend()
		}(pod)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the cell to apply the log", func() bool {
		return len(canonical(c.Index())) == len(want) && equalStrings(canonical(c.Index()), want)
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// toProto converts a batch to what a publisher sidecar sends.
func toProto(b *events.Batch) *eventsv1.PublishRequest {
	req := &eventsv1.PublishRequest{Pod: b.Pod, Model: b.Model, EventId: b.Seq, Ts: b.TS}
	for _, ev := range b.Events {
		switch ev.Kind {
		case events.KindBlockStored:
			s := &eventsv1.BlockStored{BlockHashes: ev.BlockHashes, TokenIds: ev.TokenIDs, BlockSize: uint32(ev.BlockSize), Medium: string(ev.Medium), LoraName: ev.LoRAName}
			if ev.HasParent {
				p := ev.ParentHash
				s.ParentBlockHash = &p
			}
			req.Events = append(req.Events, &eventsv1.KVEvent{Event: &eventsv1.KVEvent_BlockStored{BlockStored: s}})
		case events.KindBlockRemoved:
			req.Events = append(req.Events, &eventsv1.KVEvent{Event: &eventsv1.KVEvent_BlockRemoved{BlockRemoved: &eventsv1.BlockRemoved{BlockHashes: ev.BlockHashes, Medium: string(ev.Medium)}}})
		case events.KindAllBlocksCleared:
			req.Events = append(req.Events, &eventsv1.KVEvent{Event: &eventsv1.KVEvent_AllBlocksCleared{AllBlocksCleared: &eventsv1.AllBlocksCleared{}}})
		}
	}
	return req
}

// TestCellRestartCatchesUp stops a cell in the middle of the recorded log
// and starts a new one (with an empty index, as a restarted process has):
// the new cell catches up from the pods' replay sockets and ends with the
// same index as the log applied once.
func TestCellRestartCatchesUp(t *testing.T) {
	recs := loadLog(t)
	cfg := testConfig()
	cfg.Events.AcceptUnknownPods = true // the log's publishers are its pods
	ref, refIx := newApplierIndex(t, cfg)
	for _, r := range recs {
		if err := ref.ApplyBatch(context.Background(), decodeRecord(t, r)); err != nil {
			t.Fatal(err)
		}
	}
	want := canonical(refIx)

	pubs := map[string]*vllmpub.Publisher{}
	var order []string
	for _, r := range recs {
		if pubs[r.Pod] != nil {
			continue
		}
		p, err := vllmpub.New(vllmpub.DefaultConfig(r.Pod, r.Model))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		pubs[r.Pod] = p
		order = append(order, r.Pod)
		cfg.Pods = append(cfg.Pods, PodConfig{ID: r.Pod, ZMQEndpoint: p.Endpoint(), ReplayEndpoint: p.ReplayEndpoint()})
	}
	cfg.Events.DefaultModel = recs[0].Model

	publish := func(rs []eventlog.Record) {
		for _, r := range rs {
			if _, err := pubs[r.Pod].PublishPayload(r.Payload); err != nil {
				t.Fatal(err)
			}
		}
	}
	first, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	for _, pod := range order {
		waitFor(t, pod+" subscribed", pubs[pod].Subscribed)
	}
	half := len(recs) / 2
	publish(recs[:half])
	waitFor(t, "the first cell to index the first half", func() bool { return first.Index().Stats().Blocks > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first cell: %v", err)
	}

	// The pods go on publishing while no cell listens, then a new cell starts.
	publish(recs[half:])
	second := startCell(t, cfg)
	waitFor(t, "the restarted cell to catch up", func() bool { return equalStrings(canonical(second.Index()), want) })
}
