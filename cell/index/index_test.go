package index

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func minWrites(w *[3]atomic.Int64) int64 {
	m := w[0].Load()
	for i := range w {
		m = min(m, w[i].Load())
	}
	return m
}

func chainOf(n int, salt uint64) []BlockHash {
	out := make([]BlockHash, n)
	for i := range out {
		out[i] = BlockHash((salt<<20 | uint64(i+1)) * 0x9E3779B97F4A7C15)
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"zero max blocks", func(c *Config) { c.MaxBlocks = 0 }, false},
		{"zero sweepers", func(c *Config) { c.SweepWorkers = 0 }, false},
		{"too many sweepers", func(c *Config) { c.SweepWorkers = 257 }, false},
		{"expected blocks", func(c *Config) { c.ExpectedBlocks = 1 << 20 }, true},
		{"negative expected blocks", func(c *Config) { c.ExpectedBlocks = -1 }, false},
		{"expected blocks over the cap", func(c *Config) { c.MaxBlocks, c.ExpectedBlocks = 100, 101 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want it to wrap ErrInvalidConfig", err)
			}
		})
	}
}

func TestRegisterAndSlotReuse(t *testing.T) {
	ix := newTestIndex(t, DefaultConfig())
	if _, err := ix.Register(""); !errors.Is(err, ErrEmptyPodID) {
		t.Fatalf("Register(\"\") = %v, want ErrEmptyPodID", err)
	}
	a, _ := ix.Register("a")
	if again, _ := ix.Register("a"); again != a {
		t.Fatalf("Register twice gave %d then %d", a, again)
	}
	chain := chainOf(4, 1)
	ix.Store(a, TierGPU, chain)
	ix.Kill(a)
	// Phase 1: a killed pod drops out of queries at once.
	var r MatchResult
	ix.Match(chain, &r)
	if d := r.Depth(a); d != 0 {
		t.Fatalf("killed pod depth = %d, want 0", d)
	}
	// Writes for a dead slot are ignored.
	res := ix.Apply([]Op{{Kind: OpStore, Slot: a, Hash: chainOf(1, 2)[0]}})
	if res.Stale != 1 {
		t.Fatalf("stale ops = %d, want 1", res.Stale)
	}
	// Fill every other slot: the killed slot is not handed out before its sweep
	// finished, and after it, it is reused empty.
	ix.WaitSweeps()
	if n := ix.Stats().Blocks; n != 0 {
		t.Fatalf("blocks after sweep = %d, want 0", n)
	}
	b, _ := ix.Register("b")
	if b != a {
		t.Fatalf("new pod got slot %d, want the swept slot %d", b, a)
	}
	ix.Match(chain, &r)
	if d := r.Depth(b); d != 0 {
		t.Fatalf("reused slot inherited depth %d", d)
	}
	for i := 0; i < MaxPods-1; i++ {
		if _, err := ix.Register("p" + itoa(i)); err != nil {
			t.Fatalf("Register #%d: %v", i, err)
		}
	}
	if _, err := ix.Register("one-too-many"); !errors.Is(err, ErrNoFreeSlot) {
		t.Fatalf("257th Register = %v, want ErrNoFreeSlot", err)
	}
	if st := ix.Stats(); st.LivePods != MaxPods {
		t.Fatalf("LivePods = %d, want %d", st.LivePods, MaxPods)
	}
}

func TestSlotNotReusedBeforeSweep(t *testing.T) {
	ix := newTestIndex(t, DefaultConfig())
	ix.Close() // no sweeper: a killed slot stays sweeping
	for i := 0; i < MaxPods; i++ {
		if _, err := ix.Register("p" + itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	ix.Kill(7)
	if _, err := ix.Register("new"); !errors.Is(err, ErrNoFreeSlot) {
		t.Fatalf("Register while slot 7 awaits its sweep = %v, want ErrNoFreeSlot", err)
	}
}

func TestTiers(t *testing.T) {
	ix := newTestIndex(t, DefaultConfig())
	s, _ := ix.Register("pod")
	h := chainOf(1, 3)
	var r MatchResult
	depth := func() int { ix.Match(h, &r); return r.Depth(s) }

	ix.Store(s, TierGPU, h)
	ix.Store(s, TierCPU, h) // offloaded copy
	if got := ix.TierOf(s, h[0]); got != TierGPU {
		t.Fatalf("TierOf = %d, want GPU", got)
	}
	ix.Remove(s, TierGPU, h) // GPU copy evicted, CPU copy stays
	if got := depth(); got != 1 {
		t.Fatalf("depth after GPU removal = %d, want 1 (CPU copy)", got)
	}
	if got := ix.TierOf(s, h[0]); got != TierCPU {
		t.Fatalf("TierOf = %d, want CPU", got)
	}
	ix.Remove(s, TierStorage, h) // not there: no-op
	if got := depth(); got != 1 {
		t.Fatalf("depth after removing an absent tier = %d, want 1", got)
	}
	ix.Remove(s, TierCPU, h)
	if got := depth(); got != 0 {
		t.Fatalf("depth after last tier removed = %d, want 0", got)
	}
	ix.Store(s, TierStorage, h)
	if got := ix.TierOf(s, h[0]); got != TierStorage {
		t.Fatalf("TierOf = %d, want storage", got)
	}
	ix.Kill(s)
	ix.WaitSweeps()
	if n := ix.tiers[s].n.Load(); n != 0 {
		t.Fatalf("tier map of a swept pod has %d entries", n)
	}
}

func TestCapKeepsChainsWhole(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxBlocks = 10
	ix := newTestIndex(t, cfg)
	a, _ := ix.Register("a")
	b, _ := ix.Register("b")
	chain := chainOf(16, 4)
	if n := ix.Store(a, TierGPU, chain); n != 10 {
		t.Fatalf("Store returned %d, want 10 (cap)", n)
	}
	// b can still hold known blocks, and removal frees room.
	if n := ix.Store(b, TierGPU, chain[:10]); n != 10 {
		t.Fatalf("Store of known blocks returned %d, want 10", n)
	}
	var r MatchResult
	ix.Match(chain, &r)
	if got := r.Depth(a); got != 10 {
		t.Fatalf("depth = %d, want 10", got)
	}
	st := ix.Stats()
	if st.CapDrops != 6 || st.Blocks != 10 {
		t.Fatalf("CapDrops=%d Blocks=%d, want 6 and 10", st.CapDrops, st.Blocks)
	}
	ix.Remove(a, TierGPU, chain[5:10])
	ix.Remove(b, TierGPU, chain[5:10])
	if n := ix.Store(a, TierGPU, chainOf(3, 5)); n != 3 {
		t.Fatalf("Store after removal returned %d, want 3", n)
	}
}

func TestIdempotentOps(t *testing.T) {
	for _, lay := range testLayouts {
		t.Run(string(lay), func(t *testing.T) { testIdempotentOps(t, lay) })
	}
}

func testIdempotentOps(t *testing.T, lay Layout) {
	// Every op applied twice leaves the same index as applied once.
	rng := rand.New(rand.NewPCG(3, 3))
	cfg := DefaultConfig()
	cfg.Layout = lay
	once := newTestIndex(t, cfg)
	twice := newTestIndex(t, cfg)
	for _, ix := range []*Index{once, twice} {
		for i := 0; i < 20; i++ {
			ix.Register("p" + itoa(i))
		}
	}
	for i := 0; i < 2000; i++ {
		op := Op{Kind: OpKind(1 + rng.IntN(2)), Slot: Slot(rng.IntN(20)), Hash: BlockHash(1 + rng.IntN(300))}
		// A fixed place per hash, a few pages of a few blocks each.
		op.Pos = int32(op.Hash % (2 * PageSize))
		op.Page = op.Hash
		if op.Pos%PageSize != 0 {
			op.Page = BlockHash(1000 + op.Hash%7)
		}
		once.Apply([]Op{op})
		twice.Apply([]Op{op, op})
		if rng.IntN(200) == 0 {
			s := Slot(rng.IntN(20))
			once.ClearPod(s)
			twice.ClearPod(s)
			twice.ClearPod(s)
		}
	}
	for _, s := range []Slot{4, 11} {
		once.Kill(s)
		twice.Kill(s)
		twice.Kill(s)
	}
	once.WaitSweeps()
	twice.WaitSweeps()
	a, b := once.Dump(), twice.Dump()
	if len(a) != len(b) {
		t.Fatalf("dumps differ in length: %d vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("dumps differ at %d: %+v vs %+v", i, a[i], b[i])
		}
	}
}

// TestConcurrentReadersWriters runs writers, readers, kills and sweeps at
// once under the race detector, and checks that a pod whose chain nobody
// touches always matches in full while the rest of the index churns.
func TestConcurrentReadersWriters(t *testing.T) {
	for _, lay := range testLayouts {
		t.Run(string(lay), func(t *testing.T) { testConcurrentReadersWriters(t, lay) })
	}
}

func testConcurrentReadersWriters(t *testing.T, lay Layout) {
	cfg := DefaultConfig()
	cfg.Layout = lay
	ix := newTestIndex(t, cfg)
	stable, _ := ix.Register("stable")
	chain := chainOf(64, 77)
	ix.Store(stable, TierGPU, chain)
	var writers, readers sync.WaitGroup
	stop := make(chan struct{})
	var writes [3]atomic.Int64
	for w := 0; w < 3; w++ {
		writers.Add(1)
		go func(w int) {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				writes[w].Add(1)
				id := "w" + itoa(w) + "-" + itoa(i%5)
				s, err := ix.Register(id)
				if err != nil {
					continue
				}
				c := chainOf(1+rng.IntN(40), uint64(rng.IntN(50)))
				ix.Store(s, TierGPU, c)
				ix.Apply(chainOps(OpRemove, s, c, len(c)/2, len(c)))
				if rng.IntN(10) == 0 {
					ix.Kill(s)
				}
			}
		}(w)
	}
	for q := 0; q < 2; q++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var r MatchResult
			deadline := time.Now().Add(30 * time.Second)
			for i := 0; i < 3000 || (minWrites(&writes) < 200 && time.Now().Before(deadline)); i++ {
				ix.Match(chain, &r)
				if d := r.Depth(stable); d != len(chain) {
					t.Errorf("stable pod depth = %d, want %d", d, len(chain))
					return
				}
			}
		}()
	}
	readers.Wait()
	close(stop)
	writers.Wait()
	for w := range writes {
		if writes[w].Load() == 0 {
			t.Errorf("writer %d made no progress while readers ran", w)
		}
	}
	ix.WaitSweeps()
	var r MatchResult
	ix.Match(chain, &r)
	if d := r.Depth(stable); d != len(chain) {
		t.Fatalf("stable pod depth after churn = %d, want %d", d, len(chain))
	}
}
