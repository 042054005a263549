package index

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// learnFixture is an index with a learner and one pod slot per id.
type learnFixture struct {
	ix    *Index
	l     *Learner
	slots map[string]Slot
}

func newLearnFixture(t testing.TB, cfg LearnConfig, pods ...string) *learnFixture {
	t.Helper()
	ix := newTestIndex(t, DefaultConfig())
	l, err := NewLearner(ix, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &learnFixture{ix: ix, l: l, slots: map[string]Slot{}}
	for _, p := range pods {
		s, err := ix.Register(p)
		if err != nil {
			t.Fatal(err)
		}
		f.slots[p] = s
	}
	return f
}

// depths returns pod's matched and exact depth for chain, and whether the
// answer is approximate.
func (f *learnFixture) depths(pod string, chain []BlockHash) (depth, exact int, approx bool) {
	var r MatchResult
	f.ix.Match(chain, &r)
	s := f.slots[pod]
	f.ix.SplitLearned(chain, &r, BitmapOf(s))
	return r.Depth(s), r.ExactDepth(s), r.Approximate().Has(s)
}

// testChain returns n distinct chained-looking hashes starting at base.
func testChain(base uint64, n int) []BlockHash {
	out := make([]BlockHash, n)
	for i := range out {
		out[i] = BlockHash(base*1_000_003 + uint64(i) + 1)
	}
	return out
}

var t0 = time.Unix(1_700_000_000, 0)

func TestSpeculativeEntriesExpireUnderInjectedClock(t *testing.T) {
	cfg := DefaultLearnConfig()
	f := newLearnFixture(t, cfg, "a", "b")
	chain := testChain(1, 12)
	f.ix.Store(f.slots["a"], TierGPU, chain[:4]) // a holds 4 blocks exactly
	if got := f.l.Speculate(f.slots["a"], chain, t0); got != 8 {
		t.Fatalf("Speculate added %d blocks, want 8 (12 minus the 4 held)", got)
	}
	tests := []struct {
		name              string
		at                time.Time
		depth, exact      int
		expired           int
		specBlocks, total int64
	}{
		{"before the TTL", t0.Add(cfg.SpeculativeTTL - time.Nanosecond), 12, 4, 0, 8, 12},
		{"at the TTL", t0.Add(cfg.SpeculativeTTL), 4, 4, 8, 0, 4},
		{"later", t0.Add(time.Hour), 4, 4, 0, 0, 4},
	}
	for _, tt := range tests {
		if got := f.l.Expire(tt.at); got != tt.expired {
			t.Errorf("%s: Expire removed %d blocks, want %d", tt.name, got, tt.expired)
		}
		d, e, approx := f.depths("a", chain)
		if d != tt.depth || e != tt.exact || approx {
			t.Errorf("%s: got depth %d, exact %d, approximate %v; want %d, %d, false", tt.name, d, e, approx, tt.depth, tt.exact)
		}
		if st := f.l.Stats(); st.SpeculativeBlocks != tt.specBlocks {
			t.Errorf("%s: got %d speculative blocks, want %d", tt.name, st.SpeculativeBlocks, tt.specBlocks)
		}
		if st := f.ix.Stats(); st.Blocks != tt.total {
			t.Errorf("%s: index holds %d blocks, want %d", tt.name, st.Blocks, tt.total)
		}
	}
	if d, _, _ := f.depths("b", chain); d != 0 {
		t.Errorf("pod b got depth %d, want 0: speculation is per pod", d)
	}
}

func TestSpeculativeEntriesConfirmedByEvents(t *testing.T) {
	cfg := DefaultLearnConfig()
	f := newLearnFixture(t, cfg, "a")
	a, chain := f.slots["a"], testChain(2, 10)
	f.l.Speculate(a, chain, t0)
	// The engine's events store the first 6 blocks: they are exact now and
	// outlive the speculative TTL; the other 4 expire.
	f.ix.Store(a, TierGPU, chain[:6])
	if d, e, _ := f.depths("a", chain); d != 10 || e != 6 {
		t.Fatalf("after the events: got depth %d, exact %d; want 10, 6", d, e)
	}
	f.l.Expire(t0.Add(cfg.SpeculativeTTL))
	if d, e, _ := f.depths("a", chain); d != 6 || e != 6 {
		t.Fatalf("after the TTL: got depth %d, exact %d; want 6, 6", d, e)
	}
	if st := f.l.Stats(); st.Confirmed != 6 || st.Expired != 4 {
		t.Fatalf("got %d confirmed, %d expired; want 6, 4", st.Confirmed, st.Expired)
	}
}

func TestRemovalEventClearsSpeculativeDescendants(t *testing.T) {
	f := newLearnFixture(t, DefaultLearnConfig(), "a")
	a, chain := f.slots["a"], testChain(3, 10)
	f.ix.Store(a, TierGPU, chain[:3])
	f.l.Speculate(a, chain, t0)
	// The engine evicts block 2 (a leaf of what it stored): the speculative
	// blocks after it cannot be reused and go with it.
	f.ix.Remove(a, TierGPU, chain[2:3])
	if d, e, _ := f.depths("a", chain); d != 2 || e != 2 {
		t.Fatalf("got depth %d, exact %d; want 2, 2", d, e)
	}
	if spec, _ := f.l.Learned(a); spec != 0 {
		t.Fatalf("got %d speculative blocks left, want 0", spec)
	}
	if st := f.ix.Stats(); st.Blocks != 2 {
		t.Fatalf("index holds %d blocks, want 2", st.Blocks)
	}
}

func TestPodDeathClearsLearnedBlocks(t *testing.T) {
	f := newLearnFixture(t, DefaultLearnConfig(), "a")
	a, chain := f.slots["a"], testChain(4, 8)
	f.l.SetApproximate(a, true, 0)
	f.l.Touch(a, chain, t0)
	f.l.Speculate(a, testChain(5, 8), t0)
	f.ix.Kill(a)
	f.ix.WaitSweeps()
	if st := f.l.Stats(); st.SpeculativeBlocks != 0 || st.ApproximateBlocks != 0 || st.ApproximateSlots != 0 {
		t.Fatalf("after the kill: %+v, want nothing learned", st)
	}
	if st := f.ix.Stats(); st.Blocks != 0 {
		t.Fatalf("after the sweep the index holds %d blocks, want 0", st.Blocks)
	}
	// The slot comes back clean for the next pod.
	s, err := f.ix.Register("b")
	if err != nil {
		t.Fatal(err)
	}
	if f.l.Approximate(s) {
		t.Fatalf("a reused slot is approximate, want the default (exact)")
	}
}

func TestApproximateBlocksLiveUntilUnused(t *testing.T) {
	cfg := DefaultLearnConfig()
	f := newLearnFixture(t, cfg, "a")
	a, chain := f.slots["a"], testChain(6, 16)
	f.l.SetApproximate(a, true, 0)
	if got := f.l.Touch(a, chain[:8], t0); got != 8 {
		t.Fatalf("Touch added %d, want 8", got)
	}
	if d, e, approx := f.depths("a", chain); d != 8 || e != 0 || !approx {
		t.Fatalf("got depth %d, exact %d, approximate %v; want 8, 0, true", d, e, approx)
	}
	// A second request uses the first 4 blocks half a TTL later: they live
	// on, the other 4 expire at the first TTL.
	half := t0.Add(cfg.ApproximateTTL / 2)
	f.l.Touch(a, chain[:4], half)
	f.l.Expire(t0.Add(cfg.ApproximateTTL))
	if d, _, _ := f.depths("a", chain); d != 4 {
		t.Fatalf("after the first TTL: depth %d, want 4", d)
	}
	f.l.Expire(half.Add(cfg.ApproximateTTL))
	if d, _, _ := f.depths("a", chain); d != 0 {
		t.Fatalf("after the second TTL: depth %d, want 0", d)
	}
	// Touch does nothing for a pod with events.
	f.l.SetApproximate(a, false, 0)
	if got := f.l.Touch(a, chain, t0); got != 0 {
		t.Fatalf("Touch of an exact pod added %d, want 0", got)
	}
}

func TestApproximateMemoryIsBounded(t *testing.T) {
	const bound = 100
	f := newLearnFixture(t, DefaultLearnConfig(), "a")
	a := f.slots["a"]
	f.l.SetApproximate(a, true, bound)
	// 50 conversations of 30 blocks, the first one used again each time.
	hot := testChain(7, 30)
	for i := 0; i < 50; i++ {
		now := t0.Add(time.Duration(i) * time.Second)
		f.l.Touch(a, testChain(uint64(100+i), 30), now)
		f.l.Touch(a, hot, now)
		if _, n := f.l.Learned(a); n > bound {
			t.Fatalf("after %d chains the pod holds %d learned blocks, want at most %d", i+1, n, bound)
		}
	}
	if st := f.ix.Stats(); st.Blocks != bound {
		t.Fatalf("index holds %d blocks, want %d (the bound)", st.Blocks, bound)
	}
	if d, _, _ := f.depths("a", hot); d != 30 {
		t.Fatalf("the chain used every time has depth %d, want 30: LRU keeps it", d)
	}
	if d, _, _ := f.depths("a", testChain(100, 30)); d != 0 {
		t.Fatalf("the oldest chain has depth %d, want 0: LRU dropped it", d)
	}
	// The bound cuts a long chain from its end, never leaving a hole.
	long := testChain(8, 3*bound)
	f.l.Touch(a, long, t0.Add(time.Hour))
	if d, _, _ := f.depths("a", long); d != bound {
		t.Fatalf("a chain longer than the bound has depth %d, want %d", d, bound)
	}
	if st := f.l.Stats(); st.Evicted == 0 {
		t.Fatalf("no eviction counted: %+v", st)
	}
}

// TestSpeculativeBlocksDoNotEvictStoredOnes fills an approximate pod's
// bound with stored (approximate) blocks and then routes requests of new
// prompts there: their speculative blocks, prefills still running, are
// bounded apart, so the stored blocks stay, as they do in the engine's
// cache until those prefills end and store their blocks; their first
// tokens then evict the least recently used stored blocks.
func TestSpeculativeBlocksDoNotEvictStoredOnes(t *testing.T) {
	const bound = 40
	f := newLearnFixture(t, DefaultLearnConfig(), "a")
	a := f.slots["a"]
	f.l.SetApproximate(a, true, bound)
	stored := testChain(1, bound)
	f.l.Touch(a, stored, t0)
	// Three requests in flight, 30 new blocks in all.
	inflight := [][]BlockHash{testChain(2, 10), testChain(3, 10), testChain(4, 10)}
	for _, c := range inflight {
		f.l.Speculate(a, c, t0.Add(time.Millisecond))
	}
	if d, _, _ := f.depths("a", stored); d != bound {
		t.Fatalf("stored chain has depth %d after speculating, want %d: in-flight prefills evicted it", d, bound)
	}
	for _, c := range inflight {
		if d, _, _ := f.depths("a", c); d != 10 {
			t.Fatalf("speculated chain has depth %d, want 10", d)
		}
	}
	if spec, approx := f.l.Learned(a); spec != 30 || approx != bound {
		t.Fatalf("Learned = %d speculative, %d approximate; want 30, %d", spec, approx, bound)
	}
	// The first prefill ends: its 10 blocks are stored, and the 10 least
	// recently used stored blocks (the deepest of the old chain) go.
	f.l.Touch(a, inflight[0], t0.Add(time.Second))
	if d, _, _ := f.depths("a", stored); d != bound-10 {
		t.Fatalf("old stored chain has depth %d after a first token, want %d", d, bound-10)
	}
	if spec, approx := f.l.Learned(a); spec != 20 || approx != bound {
		t.Fatalf("Learned = %d speculative, %d approximate; want 20, %d", spec, approx, bound)
	}
	// Speculative blocks have a bound of their own.
	f.l.Speculate(a, testChain(5, 2*bound), t0.Add(2*time.Second))
	if spec, _ := f.l.Learned(a); spec != bound {
		t.Fatalf("%d speculative blocks, want the bound %d", spec, bound)
	}
}

func TestApproximatePodSwitchesToExactOnEvents(t *testing.T) {
	f := newLearnFixture(t, DefaultLearnConfig(), "a")
	a, chain := f.slots["a"], testChain(9, 10)
	f.l.SetApproximate(a, true, 0)
	f.l.Touch(a, chain, t0)
	f.l.Touch(a, testChain(10, 5), t0)
	// The engine starts publishing: it stores the first 3 blocks of chain.
	f.ix.Store(a, TierGPU, chain[:3])
	if f.l.Approximate(a) {
		t.Fatalf("still approximate after an event")
	}
	if d, e, approx := f.depths("a", chain); d != 3 || e != 3 || approx {
		t.Fatalf("got depth %d, exact %d, approximate %v; want 3, 3, false", d, e, approx)
	}
	if d, _, _ := f.depths("a", testChain(10, 5)); d != 0 {
		t.Fatalf("an approximate chain the events did not name has depth %d, want 0", d)
	}
	if st := f.ix.Stats(); st.Blocks != 3 {
		t.Fatalf("index holds %d blocks, want 3", st.Blocks)
	}
}

func TestSpeculateIsIdempotent(t *testing.T) {
	f := newLearnFixture(t, DefaultLearnConfig(), "a")
	a, chain := f.slots["a"], testChain(11, 9)
	f.l.Speculate(a, chain, t0)
	once := f.ix.Dump()
	if got := f.l.Speculate(a, chain, t0); got != 0 {
		t.Fatalf("the second Speculate added %d blocks, want 0", got)
	}
	twice := f.ix.Dump()
	if len(once) != len(twice) {
		t.Fatalf("Dump has %d blocks after one Speculate and %d after two", len(once), len(twice))
	}
	for i := range once {
		if once[i] != twice[i] {
			t.Fatalf("Dump[%d] = %+v after one, %+v after two", i, once[i], twice[i])
		}
	}
	if spec, _ := f.l.Learned(a); spec != 9 {
		t.Fatalf("got %d speculative blocks, want 9", spec)
	}
}

func TestSpeculationOff(t *testing.T) {
	cfg := DefaultLearnConfig()
	cfg.SpeculativeTTL = 0
	f := newLearnFixture(t, cfg, "a")
	if got := f.l.Speculate(f.slots["a"], testChain(12, 4), t0); got != 0 {
		t.Fatalf("Speculate with SpeculativeTTL 0 added %d blocks, want 0", got)
	}
}

func TestLearnConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*LearnConfig)
		want string
	}{
		{"default", func(*LearnConfig) {}, ""},
		{"spec off", func(c *LearnConfig) { c.SpeculativeTTL = 0 }, ""},
		{"negative spec", func(c *LearnConfig) { c.SpeculativeTTL = -1 }, "SpeculativeTTL"},
		{"approx ttl", func(c *LearnConfig) { c.ApproximateTTL = 0 }, "ApproximateTTL"},
		{"bound", func(c *LearnConfig) { c.MaxBlocksPerSlot = 0 }, "MaxBlocksPerSlot"},
	}
	for _, tt := range tests {
		c := DefaultLearnConfig()
		tt.edit(&c)
		err := c.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
			t.Errorf("%s: got %v, want error naming %q", tt.name, err, tt.want)
		}
	}
	ix := newTestIndex(t, DefaultConfig())
	if _, err := NewLearner(ix, DefaultLearnConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLearner(ix, DefaultLearnConfig()); !errors.Is(err, ErrLearnerAttached) {
		t.Fatalf("a second learner: got %v, want ErrLearnerAttached", err)
	}
}

// TestLearnerConcurrentPrefixClosed runs speculation, approximate learning,
// exact writes, expiry, queries and kills at once (for the race detector)
// and checks afterwards that every pod's holdings are prefix-closed.
func TestLearnerConcurrentPrefixClosed(t *testing.T) {
	f := newLearnFixture(t, LearnConfig{SpeculativeTTL: time.Millisecond, ApproximateTTL: 5 * time.Millisecond, MaxBlocksPerSlot: 64},
		"a", "b", "c", "d")
	f.l.SetApproximate(f.slots["c"], true, 0)
	chains := make([][]BlockHash, 8)
	for i := range chains {
		chains[i] = testChain(uint64(20+i%3), 20+i*5) // chains sharing prefixes
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	run := func(fn func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				fn(i)
			}
		}()
	}
	a, c := f.slots["a"], f.slots["c"]
	var d atomic.Int32
	d.Store(int32(f.slots["d"]))
	slots := func() []Slot { return []Slot{a, f.slots["b"], c, Slot(d.Load())} }
	fixed := slots()
	run(func(i int) {
		s := fixed[i%3]
		if i%4 == 3 {
			s = Slot(d.Load())
		}
		f.l.Speculate(s, chains[i%8], time.Now())
	})
	run(func(i int) { f.l.Touch(c, chains[(i+3)%8], time.Now()) })
	run(func(i int) {
		c := chains[i%8]
		n := 1 + i%len(c)
		if i%3 == 0 {
			// Remove the block and every descendant the pod may hold: the
			// rest of the longest chain with this prefix.
			f.ix.Remove(a, TierGPU, testChain(uint64(20+i%3), 60)[n-1:])
		} else {
			f.ix.Store(a, TierGPU, c[:n])
		}
	})
	run(func(i int) { f.l.Expire(time.Now()) })
	run(func(i int) {
		var r MatchResult
		f.ix.Match(chains[i%8], &r)
		f.ix.SplitLearned(chains[i%8], &r, r.Matched())
		for _, s := range slots() {
			if r.ExactDepth(s) > r.Depth(s) {
				t.Errorf("ExactDepth %d above Depth %d", r.ExactDepth(s), r.Depth(s))
			}
		}
	})
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		f.ix.Kill(Slot(d.Load()))
		if s, err := f.ix.Register("d"); err == nil {
			d.Store(int32(s))
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	// Prefix-closed: a pod holding chain[i] holds chain[i-1].
	for k, s := range slots() {
		name := string(rune('a' + k))
		for _, c := range chains {
			for i := 1; i < len(c); i++ {
				if f.ix.holdsAt(s, c, i) && !f.ix.holdsAt(s, c, i-1) {
					t.Fatalf("pod %s holds block %d of a chain but not block %d", name, i, i-1)
				}
			}
		}
	}
}

func TestSpeculateStopsAtTheReservedHash(t *testing.T) {
	f := newLearnFixture(t, DefaultLearnConfig(), "a")
	chain := testChain(13, 6)
	chain[3] = 0
	if got := f.l.Speculate(f.slots["a"], chain, t0); got != 3 {
		t.Fatalf("Speculate added %d blocks, want the 3 before the zero hash", got)
	}
	if spec, _ := f.l.Learned(f.slots["a"]); spec != 3 {
		t.Fatalf("got %d speculative blocks, want 3", spec)
	}
}
