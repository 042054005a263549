package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naiveMerge is the reference BPE: repeatedly find the adjacent pair with
// the lowest merge rank (the leftmost on ties) by scanning the whole word,
// and merge it. O(n^2) map lookups, obviously correct.
func naiveMerge(m *bpeModel, syms []uint32) []uint32 {
	syms = slices.Clone(syms)
	for {
		best, bestRank := -1, uint32(noRank)
		for i := 0; i+1 < len(syms); i++ {
			if mg, ok := m.merges[pairKey(syms[i], syms[i+1])]; ok && mg.rank < bestRank {
				best, bestRank = i, mg.rank
			}
		}
		if best < 0 {
			return syms
		}
		id := m.merges[pairKey(syms[best], syms[best+1])].id
		syms = slices.Replace(syms, best, best+2, id)
	}
}

// checkMerges compares mergeSmall (when the word fits) and mergeHeap with
// naiveMerge on one word of initial symbols.
func checkMerges(t *testing.T, m *bpeModel, label string, syms []uint32) {
	t.Helper()
	want := naiveMerge(m, syms)
	if len(syms) <= smallWord {
		w := slices.Clone(syms)
		if got := w[:mergeSmall(m, w)]; !slices.Equal(got, want) {
			t.Fatalf("mergeSmall(%s) got %v, want %v", label, got, want)
		}
	}
	if len(syms) > 0 {
		w := slices.Clone(syms)
		if got := w[:mergeHeap(m, w)]; !slices.Equal(got, want) {
			t.Fatalf("mergeHeap(%s) got %v, want %v", label, got, want)
		}
	}
}

// randomText returns a random string over an alphabet that mixes frequent
// English fragments with bytes and characters the merges do not know.
func randomText(r *rand.Rand, n int) string {
	parts := []string{"the", " the", "ing", "tion", "e", "t", " ", "  ", "\n", "er", "re", "an", "block", "cache",
		"0", "12", ".", ",", "!", "é", "日", "😀", "\xff", "ll", "'s", "router", "tokens", "a", "s"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// TestMergeAgainstReference checks both merge algorithms against the naive
// reference on the fixtures' real merge tables, for random words of up to
// a few hundred symbols (so the heap path runs too).
func TestMergeAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			m := loadFixture(t, f.name, Options{}).model
			for i := 0; i < 250; i++ {
				text := randomText(r, 1+r.IntN(300))
				if !m.byteLevel {
					text = strings.ReplaceAll(text, " ", "\u2581")
				}
				checkMerges(t, m, text, m.symbols(text, nil))
			}
		})
	}
}

// TestMergeAdversarialRanks checks the merge algorithms on random merge
// tables over a three-letter alphabet, where ranks need not follow the
// order in which tokens were built (a merge of "aa"+"a" may outrank "a"+"a"),
// which is where heap and tie-breaking bugs show.
func TestMergeAdversarialRanks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for table := 0; table < 50; table++ {
		m := &bpeModel{vocab: map[string]uint32{"a": 0, "b": 1, "c": 2}, merges: map[uint64]merge{}}
		toks := []string{"a", "b", "c"}
		for len(m.merges) < 30 {
			x, y := toks[r.IntN(len(toks))], toks[r.IntN(len(toks))]
			xy := x + y
			if len(xy) > 6 {
				continue
			}
			if _, ok := m.vocab[xy]; !ok {
				m.vocab[xy] = uint32(len(toks))
				toks = append(toks, xy)
			}
			key := pairKey(m.vocab[x], m.vocab[y])
			if _, ok := m.merges[key]; !ok {
				m.merges[key] = merge{rank: uint32(r.IntN(1000)*64 + len(m.merges)), id: m.vocab[xy]}
			}
		}
		for i := 0; i < 40; i++ {
			n := 1 + r.IntN(120)
			syms := make([]uint32, n)
			for j := range syms {
				syms[j] = uint32(r.IntN(3))
			}
			checkMerges(t, m, "random", syms)
		}
	}
}

// TestMinHeap checks the heap against sorting.
func TestMinHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var h minHeap
	var want []uint64
	for i := 0; i < 500; i++ {
		x := r.Uint64N(100)
		h.push(x)
		want = append(want, x)
	}
	slices.Sort(want)
	for i, w := range want {
		if got := h.pop(); got != w {
			t.Fatalf("pop %d got %d, want %d", i, got, w)
		}
	}
}
