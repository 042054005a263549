package events

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// toks returns n tokens starting at from.
func toks(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

// stored returns a BlockStored of tokens in blocks of bs, named by their
// engine prefix hashes, under parent (0 for none); prefix is the tokens
// before these, for naming.
func stored(prefix, tokens []uint32, bs int, parent uint64) Event {
	ev := Event{Kind: KindBlockStored, BlockSize: bs, TokenIDs: tokens, ParentHash: parent, HasParent: parent != 0}
	all := append(append([]uint32(nil), prefix...), tokens...)
	for i := len(prefix) + bs; i <= len(all); i += bs {
		ev.BlockHashes = append(ev.BlockHashes, engineHash("", all[:i]))
	}
	return ev
}

// routerChain is the router's chain of tokens under model.
func routerChain(model string, bs int, tokens []uint32) []index.BlockHash {
	return blockhash.Hasher{BlockSize: bs}.Chain(blockhash.Seed(blockhash.Keys{Model: model}), tokens, nil)
}

// depth returns how many leading blocks of chain the holder's slot has.
func depth(t *testing.T, ix *index.Index, holder string, chain []index.BlockHash) int {
	t.Helper()
	slot, ok := ix.SlotOf(holder)
	if !ok {
		return 0
	}
	var r index.MatchResult
	ix.Match(chain, &r)
	return r.Depth(slot)
}

func apply(t *testing.T, a *Applier, b *Batch) error {
	t.Helper()
	return a.ApplyBatch(context.Background(), b)
}

func TestApplierBlockSizes(t *testing.T) {
	tests := []struct {
		engine, router int
		tokens         int
		wantDepth      int
	}{
		{16, 16, 128, 8},
		{16, 64, 128, 2},
		{16, 64, 112, 1}, // the second router block is not complete
		{64, 16, 128, 8},
		{16, 24, 128, 5},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("engine%d_router%d_tokens%d", tc.engine, tc.router, tc.tokens), func(t *testing.T) {
			ix := newTestIndex(t)
			a := newTestApplier(t, ix, tc.router)
			all := toks(1, tc.tokens)
			// Store in two events, the second continuing from the first.
			half := tc.tokens / tc.engine / 2 * tc.engine
			first := stored(nil, all[:half], tc.engine, 0)
			second := stored(all[:half], all[half:], tc.engine, first.BlockHashes[len(first.BlockHashes)-1])
			for i, ev := range []Event{first, second} {
				if err := apply(t, a, &Batch{Pod: "p", DPRank: -1, Seq: uint64(i), Model: "m", Events: []Event{ev}}); err != nil {
					t.Fatal(err)
				}
			}
			chain := routerChain("m", tc.router, all)
			if got := depth(t, ix, "p", chain); got != tc.wantDepth {
				t.Fatalf("got depth %d, want %d", got, tc.wantDepth)
			}
			if got := depth(t, ix, "p", routerChain("other-model", tc.router, all)); got != 0 {
				t.Errorf("got depth %d under another model, want 0", got)
			}
			// Removing the second engine block cuts the chain after the
			// router blocks made of the first engine block alone.
			rm := Event{Kind: KindBlockRemoved, BlockHashes: second.BlockHashes[:1]}
			cut := half
			if len(first.BlockHashes) >= 2 {
				rm.BlockHashes, cut = first.BlockHashes[1:2], tc.engine
			}
			if err := apply(t, a, &Batch{Pod: "p", DPRank: -1, Seq: 2, Model: "m", Events: []Event{rm}}); err != nil {
				t.Fatal(err)
			}
			if got, want := depth(t, ix, "p", chain), cut/tc.router; got != want {
				t.Fatalf("after removing a middle block: got depth %d, want %d", got, want)
			}
			if got, want := a.TrackedBlocks("p"), cut/tc.engine; got != want {
				t.Errorf("got %d tracked blocks, want %d", got, want)
			}
		})
	}
}

func TestApplierDrops(t *testing.T) {
	base := stored(nil, toks(1, 32), 16, 0)
	tests := []struct {
		name       string
		cfg        func(*Config)
		batch      Batch
		wantErr    error
		wantReason DropReason
		wantEvent  bool // an event drop, the batch applies
	}{
		{"unknown model", func(c *Config) { c.Models = []string{"m"} },
			Batch{Pod: "p", DPRank: -1, Model: "x", Events: []Event{base}}, ErrUnknownModel, ReasonUnknownModel, false},
		{"default model allowed", func(c *Config) { c.Models = []string{"m"}; c.DefaultModel = "m" },
			Batch{Pod: "p", DPRank: -1, Events: []Event{base}}, nil, 0, false},
		{"no pod", nil, Batch{DPRank: -1, Events: []Event{base}}, ErrInvalid, ReasonInvalid, false},
		{"unknown parent", nil,
			Batch{Pod: "p", DPRank: -1, Events: []Event{stored(toks(1, 32), toks(33, 16), 16, 12345)}}, nil, ReasonUnknownParent, true},
		{"sliding window", nil,
			Batch{Pod: "p", DPRank: -1, Events: []Event{func() Event { e := base; e.SlidingWindow = 512; return e }()}}, nil, ReasonSlidingWindow, true},
		{"unmapped extra keys", nil,
			Batch{Pod: "p", DPRank: -1, Events: []Event{func() Event {
				e := base
				e.ExtraKeys = []BlockKeys{{{Kind: KeyOther, Text: `["img",0]`}}, nil}
				return e
			}()}}, nil, ReasonExtraKeys, true},
		{"no token ids", nil,
			Batch{Pod: "p", DPRank: -1, Events: []Event{func() Event { e := base; e.TokenIDs = nil; return e }()}}, nil, ReasonNoTokens, true},
		{"holder full", func(c *Config) { c.MaxBlocksPerPod = 1 },
			Batch{Pod: "p", DPRank: -1, Events: []Event{base}}, nil, ReasonHolderFull, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			var drops []Drop
			cfg.OnDrop = func(d Drop) { drops = append(drops, d) }
			ix := newTestIndex(t)
			a, err := NewApplier(cfg, ix, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = a.ApplyBatch(context.Background(), &tc.batch)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			// OnDrop hears of what leaves blocks unindexed, unknown parents
			// included (a stream joined mid-way), not of ordering (nor of a
			// batch without a pod, which names nobody to warn).
			wantHook := (tc.wantErr != nil || tc.wantEvent) && tc.batch.Pod != ""
			if wantHook != (len(drops) == 1) || (wantHook && (drops[0].Reason != tc.wantReason || drops[0].Pod != tc.batch.Pod || drops[0].Detail == "")) {
				t.Errorf("got OnDrop calls %+v, want one with reason %v: %v", drops, tc.wantReason, wantHook)
			}
			c := a.Counters()
			switch {
			case tc.wantErr != nil:
				if got, _ := ReasonOf(err); got != tc.wantReason || c.BatchesDropped[tc.wantReason].Load() != 1 {
					t.Errorf("got reason %v counted %d, want %v counted once", got, c.BatchesDropped[tc.wantReason].Load(), tc.wantReason)
				}
			case tc.wantEvent:
				if got := c.EventsDropped[tc.wantReason].Load(); got != 1 {
					t.Errorf("got %d events dropped as %v, want 1", got, tc.wantReason)
				}
			}
		})
	}
}

func TestApplierSequence(t *testing.T) {
	t0 := time.Unix(5000, 0)
	now := t0
	clock := func() time.Time { return now }
	cfg := DefaultConfig()
	reg, err := NewRegistry(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	ix := newTestIndex(t)
	a, err := NewApplier(cfg, ix, reg, clock)
	if err != nil {
		t.Fatal(err)
	}
	all := toks(1, 64)
	ev := stored(nil, all, 16, 0)
	chain := routerChain("", 16, all)
	batch := func(seq uint64, evs ...Event) *Batch {
		return &Batch{Pod: "p", DPRank: 2, Seq: seq, TS: float64(t0.Unix()) - 0.003, Events: evs}
	}
	if err := apply(t, a, batch(10, ev)); err != nil {
		t.Fatal(err)
	}
	if got := depth(t, ix, "p#2", chain); got != 4 {
		t.Fatalf("got depth %d, want 4", got)
	}
	if err := apply(t, a, batch(10, ev)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("got %v, want ErrDuplicate", err)
	}

	// A gap: the batch is not applied, the pod is degraded.
	rm := Event{Kind: KindBlockRemoved, BlockHashes: ev.BlockHashes[3:]}
	err = apply(t, a, batch(13, rm))
	var gap *GapError
	if !errors.As(err, &gap) || gap.From != 11 || gap.To != 12 || gap.Pending || gap.Holder != "p#2" {
		t.Fatalf("got %v, want a new gap 11..12 for p#2", err)
	}
	if st, _ := reg.State("p"); st != StateDegraded {
		t.Fatalf("got state %v, want degraded", st)
	}
	if got := depth(t, ix, "p#2", chain); got != 4 {
		t.Fatalf("got depth %d after a gap batch, want 4 (not applied)", got)
	}
	// The replay repairs it.
	for seq := uint64(11); seq <= 13; seq++ {
		evs := []Event{}
		if seq == 13 {
			evs = append(evs, rm)
		}
		if err := apply(t, a, batch(seq, evs...)); err != nil {
			t.Fatalf("replay seq %d: %v", seq, err)
		}
	}
	if st, _ := reg.State("p"); st != StateReady {
		t.Fatalf("got state %v after the replay, want ready", st)
	}
	if got := depth(t, ix, "p#2", chain); got != 3 {
		t.Fatalf("got depth %d after the replayed removal, want 3", got)
	}

	// Another gap, abandoned: the holder is cleared, the next batch is a baseline.
	if err := apply(t, a, batch(20)); !errors.Is(err, ErrGap) {
		t.Fatalf("got %v, want ErrGap", err)
	}
	if !a.GiveUp("p#2") {
		t.Fatal("GiveUp: got false, want true")
	}
	if got := depth(t, ix, "p#2", chain); got != 0 {
		t.Fatalf("got depth %d after GiveUp, want 0", got)
	}
	if err := apply(t, a, batch(25, ev)); err != nil {
		t.Fatal(err)
	}
	if got := depth(t, ix, "p#2", chain); got != 4 {
		t.Fatalf("got depth %d, want 4", got)
	}

	// A restart empties the holder before its first batch applies.
	other := stored(nil, toks(1000, 32), 16, 0)
	if err := apply(t, a, batch(0, other)); err != nil {
		t.Fatal(err)
	}
	if got := depth(t, ix, "p#2", chain); got != 0 {
		t.Fatalf("got depth %d after a restart, want 0", got)
	}
	if got := depth(t, ix, "p#2", routerChain("", 16, toks(1000, 32))); got != 2 {
		t.Fatalf("got depth %d for the new chain, want 2", got)
	}
	c := a.Counters()
	if c.Restarts.Load() != 1 || c.Gaps.Load() != 2 || c.GiveUps.Load() != 1 || c.BatchesDropped[ReasonDuplicate].Load() != 1 {
		t.Errorf("got restarts %d gaps %d give-ups %d duplicates %d, want 1 2 1 1",
			c.Restarts.Load(), c.Gaps.Load(), c.GiveUps.Load(), c.BatchesDropped[ReasonDuplicate].Load())
	}
	if got := c.Lag.Quantile(1); got != 5*time.Millisecond {
		t.Errorf("got lag bound %v, want 5ms (3ms lag)", got)
	}

	// The registry kills the silent pod; its slot dies and its state goes.
	now = t0.Add(cfg.DeadAfter + time.Second)
	if got := a.Tick(now); len(got) != 1 || got[0] != "p" {
		t.Fatalf("got kills %v, want [p]", got)
	}
	if _, ok := ix.SlotOf("p#2"); ok {
		t.Error("got a live slot for p#2 after the kill, want none")
	}
	if got := a.TrackedBlocks("p#2"); got != 0 {
		t.Errorf("got %d tracked blocks after the kill, want 0", got)
	}
	// It comes back with its next batch.
	if err := apply(t, a, batch(1, ev)); err != nil {
		t.Fatal(err)
	}
	if got := depth(t, ix, "p#2", chain); got != 4 {
		t.Fatalf("got depth %d after coming back, want 4", got)
	}
}

func TestApplierClearAndTiers(t *testing.T) {
	ix := newTestIndex(t)
	a := newTestApplier(t, ix, 16)
	all := toks(1, 48)
	ev := stored(nil, all, 16, 0)
	chain := routerChain("", 16, all)
	for _, pod := range []string{"a", "b"} {
		if err := apply(t, a, &Batch{Pod: pod, DPRank: -1, Events: []Event{ev}}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		ev           Event
		wantA, wantB int
	}{
		{func() Event { e := ev; e.Medium = "CPU"; return e }(), 3, 3},          // also on CPU
		{Event{Kind: KindBlockRemoved, BlockHashes: ev.BlockHashes[1:2]}, 3, 3}, // off the GPU, still on CPU
		{Event{Kind: KindBlockRemoved, BlockHashes: ev.BlockHashes[1:2], Medium: "cpu"}, 1, 3},
		{Event{Kind: KindAllBlocksCleared}, 0, 3},
	}
	for i, s := range steps {
		if err := apply(t, a, &Batch{Pod: "a", DPRank: -1, Seq: uint64(i + 1), Events: []Event{s.ev}}); err != nil {
			t.Fatal(err)
		}
		if ga, gb := depth(t, ix, "a", chain), depth(t, ix, "b", chain); ga != s.wantA || gb != s.wantB {
			t.Fatalf("step %d: got depths a=%d b=%d, want %d %d", i, ga, gb, s.wantA, s.wantB)
		}
	}
	if got := a.TrackedBlocks("a"); got != 0 {
		t.Errorf("got %d tracked blocks after the clear, want 0", got)
	}
}

func TestTierOf(t *testing.T) {
	for m, want := range map[Medium]index.Tier{"": index.TierGPU, "GPU": index.TierGPU, "gpu": index.TierGPU,
		"CPU": index.TierCPU, "LocalDisk": index.TierStorage, "nixl": index.TierStorage} {
		if got := tierOf(m); got != want {
			t.Errorf("tierOf(%q): got %d, want %d", m, got, want)
		}
	}
}

// fullIndex is an IndexWriter with no free slot.
type fullIndex struct{ *index.Index }

func (fullIndex) Register(string) (index.Slot, error) { return 0, errors.New("index: no free slot") }

func TestApplierNoSlotAndCancel(t *testing.T) {
	a := newTestApplier(t, fullIndex{newTestIndex(t)}, 16)
	b := &Batch{Pod: "p", DPRank: -1, Events: []Event{stored(nil, toks(0, 16), 16, 0)}}
	if err := apply(t, a, b); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("got %v, want ErrNoSlot", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.ApplyBatch(ctx, b); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if _, ok := ReasonOf(context.Canceled); ok {
		t.Error("got a drop reason for a cancelled context, want none")
	}
}
