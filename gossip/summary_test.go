package gossip

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

func TestParamsSampledMatchesEnumeration(t *testing.T) {
	for _, p := range []Params{
		{M: 64, K: 1, Stride: 4, Head: 1},
		{M: 64, K: 1, Stride: 4, Head: 0},
		{M: 64, K: 1, Stride: 1, Head: 0},
		{M: 64, K: 1, Stride: 3, Head: 5},
		{M: 64, K: 1, Stride: 8, Head: 8},
		{M: 64, K: 1, Stride: 16, Head: 2},
	} {
		for n := 0; n <= 70; n++ {
			var want []int
			for d := 1; d <= n; d++ {
				if d <= int(p.Head) || d%int(p.Stride) == 0 {
					want = append(want, d)
				}
			}
			if got := p.sampledCount(n); got != len(want) {
				t.Fatalf("%+v: sampledCount(%d) = %d, want %d", p, n, got, len(want))
			}
			for i, d := range want {
				if got := p.sampledAt(i); got != d {
					t.Fatalf("%+v: sampledAt(%d) = %d, want %d", p, i, got, d)
				}
				if !p.Sampled(d) {
					t.Fatalf("%+v: Sampled(%d) = false, want true", p, d)
				}
			}
		}
	}
}

// refDepth is the naive model of Depth: scan the sampled depths in order
// against an exact set and stop at the first miss.
func refDepth(p Params, held map[blockhash.Hash]bool, chain []blockhash.Hash) int {
	best := 0
	for d := 1; d <= len(chain); d++ {
		if !p.Sampled(d) {
			continue
		}
		if !held[chain[d-1]] {
			break
		}
		best = d
	}
	return best
}

func TestDepthMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name         string
		stride, head int
	}{
		{"stride4-head1", 4, 1},
		{"stride1", 1, 0},
		{"stride8-head4", 8, 4},
		{"stride3-head0", 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.stride)))
			cfg := DefaultSummaryConfig()
			cfg.Stride, cfg.Head = tc.stride, tc.head
			cfg.FalsePositiveRate = 1e-9 // so the filter behaves as the exact set
			b := mustBuilder(t, cfg)
			held := map[blockhash.Hash]bool{}
			var chains [][]blockhash.Hash
			for range 200 {
				c := randChain(r, 1+r.IntN(300))
				k := r.IntN(len(c) + 1) // the cell holds the first k blocks
				for d := 1; d <= k; d++ {
					if b.Add(c[d-1], d) {
						held[c[d-1]] = true
					}
				}
				chains = append(chains, c)
			}
			s := b.Build()
			p := s.Params()
			for i, c := range chains {
				got, want := s.Depth(c), refDepth(p, held, c)
				if got != want {
					t.Fatalf("chain %d (len %d): Depth = %d, want %d", i, len(c), got, want)
				}
			}
		})
	}
}

// TestDepthBinarySearchInvariant checks, on a small filter with many false
// positives, what binary search guarantees: the answer is a sampled depth
// that tests positive and the next sampled depth tests negative.
func TestDepthBinarySearchInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	cfg := DefaultSummaryConfig()
	cfg.ExpectedElements, cfg.FalsePositiveRate = 64, 0.3
	b := mustBuilder(t, cfg)
	for range 100 {
		b.AddChain(randChain(r, 40))
	}
	s := b.Build()
	p := s.Params()
	for i := range 2000 {
		c := randChain(r, 1+r.IntN(200))
		got := s.Depth(c)
		if got == 0 {
			if s.MayContain(c[p.sampledAt(0)-1]) {
				t.Fatalf("chain %d: Depth = 0 but the first sampled depth hits", i)
			}
			continue
		}
		if !p.Sampled(got) || !s.MayContain(c[got-1]) {
			t.Fatalf("chain %d: Depth = %d is not a sampled hit", i, got)
		}
		for d := got + 1; d <= len(c); d++ {
			if p.Sampled(d) {
				if s.MayContain(c[d-1]) {
					t.Fatalf("chain %d: Depth = %d but the next sampled depth %d hits", i, got, d)
				}
				break
			}
		}
	}
}

func TestNoFalseNegativesAndUnknownDepth(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	b := mustBuilder(t, DefaultSummaryConfig())
	c := randChain(r, 100)
	for _, h := range c {
		b.Add(h, 0) // depth unknown: every hash is kept
	}
	if got, want := b.Len(), len(c); got != want {
		t.Fatalf("Len = %d, want %d", got, want)
	}
	s := b.Build()
	for i, h := range c {
		if !s.MayContain(h) {
			t.Fatalf("hash %d: MayContain = false, want true", i)
		}
	}
	if got, want := s.Depth(c), 100; got != want {
		t.Fatalf("Depth = %d, want %d", got, want)
	}
	if got, want := s.Depth(c[:0]), 0; got != want {
		t.Fatalf("Depth(empty) = %d, want %d", got, want)
	}
}

func TestFalsePositiveRateNearTarget(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	cfg := DefaultSummaryConfig()
	cfg.ExpectedElements = 20000
	b := mustBuilder(t, cfg)
	for range 20000 {
		b.Add(blockhash.Hash(r.Uint64()), 0)
	}
	s := b.Build()
	fp := 0
	const trials = 100000
	for range trials {
		if s.MayContain(blockhash.Hash(r.Uint64())) {
			fp++
		}
	}
	got := float64(fp) / trials
	if got > 2*cfg.FalsePositiveRate {
		t.Fatalf("false-positive rate = %.4f, want at most %.4f", got, 2*cfg.FalsePositiveRate)
	}
	if est := s.EstimatedFalsePositiveRate(); est > 2*cfg.FalsePositiveRate {
		t.Fatalf("EstimatedFalsePositiveRate = %.4f, want at most %.4f", est, 2*cfg.FalsePositiveRate)
	}
}

func TestBuilderCapacityGrowsAndShrinks(t *testing.T) {
	cfg := DefaultSummaryConfig()
	cfg.ExpectedElements = 1000
	b := mustBuilder(t, cfg)
	steps := []struct {
		n            int
		wantCapacity int
	}{
		{500, 1000},
		{1000, 1000},
		{1001, 2000},
		{5000, 8000},
		{2500, 8000}, // above a quarter: keep the size (deltas stay possible)
		{1999, 4000}, // below a quarter: halve once, 1999 >= 4000/4
		{10, 1000},   // never below ExpectedElements
	}
	r := rand.New(rand.NewPCG(5, 5))
	var prev *Summary
	for i, st := range steps {
		for range st.n {
			b.Add(blockhash.Hash(r.Uint64()), 0)
		}
		s := b.Build()
		if got := b.Capacity(); got != st.wantCapacity {
			t.Fatalf("step %d (%d hashes): Capacity = %d, want %d", i, st.n, got, st.wantCapacity)
		}
		if got, want := s.Params(), cfg.params(st.wantCapacity); got != want {
			t.Fatalf("step %d: Params = %+v, want %+v", i, got, want)
		}
		if got, want := s.Elements(), uint64(st.n); got != want {
			t.Fatalf("step %d: Elements = %d, want %d", i, got, want)
		}
		if prev != nil && i == 2 && prev.Params() == s.Params() {
			t.Fatalf("step %d: Params did not change on growth", i)
		}
		prev = s
	}
}

func TestSummaryConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   func(*SummaryConfig)
		field string
	}{
		{"fp zero", func(c *SummaryConfig) { c.FalsePositiveRate = 0 }, "FalsePositiveRate"},
		{"fp high", func(c *SummaryConfig) { c.FalsePositiveRate = 0.9 }, "FalsePositiveRate"},
		{"expected", func(c *SummaryConfig) { c.ExpectedElements = 0 }, "ExpectedElements"},
		{"stride", func(c *SummaryConfig) { c.Stride = 0 }, "Stride"},
		{"head", func(c *SummaryConfig) { c.Head = -1 }, "Head"},
		{"maxbits", func(c *SummaryConfig) { c.MaxBits = MaxFilterBits + 64 }, "MaxBits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultSummaryConfig()
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.field)
			}
		})
	}
	if err := DefaultSummaryConfig().Validate(); err != nil {
		t.Fatalf("DefaultSummaryConfig().Validate() = %v, want nil", err)
	}
}

func TestParamsCapAtMaxBits(t *testing.T) {
	cfg := DefaultSummaryConfig()
	cfg.MaxBits = 4096
	p := cfg.params(1 << 20)
	if p.M != 4096 {
		t.Fatalf("M = %d, want 4096", p.M)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
}
