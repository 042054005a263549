package cell

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// naiveFollow is followIndex's reference: the live registrations in
// order, searched whole for every question.
type naiveFollow struct {
	regs []naiveReg
}

type naiveReg struct {
	key    uint64
	hashes []blockhash.Hash
}

// indexed reports whether add indexes depth d (1-based) of a prompt of n
// blocks: every followStride-th block and the last.
func indexed(d, n int) bool { return d == n || d%followStride == 0 }

func (m *naiveFollow) leader(hashes []blockhash.Hash, held int) (uint64, int) {
	for d := len(hashes); d > held; d-- {
		for j := len(m.regs) - 1; j >= 0; j-- {
			r := m.regs[j]
			if d <= len(r.hashes) && indexed(d, len(r.hashes)) && r.hashes[d-1] == hashes[d-1] {
				return r.key, d
			}
		}
	}
	return 0, 0
}

func TestFollowIndexAgainstNaive(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		f, m := newFollowIndex(), &naiveFollow{}
		// Prompts grow from a few roots, so that they share prefixes of
		// every depth (chained hashes: equal at a depth means equal up
		// to it).
		var prompts [][]blockhash.Hash
		next := blockhash.Hash(1)
		grow := func(base []blockhash.Hash) []blockhash.Hash {
			p := append([]blockhash.Hash(nil), base...)
			for range 1 + rng.IntN(20) {
				p = append(p, next)
				next++
			}
			return p
		}
		for range 200 {
			switch op := rng.IntN(10); {
			case op < 4 || len(prompts) == 0: // a new prompt, registered
				var p []blockhash.Hash
				if len(prompts) > 0 && rng.IntN(3) > 0 {
					base := prompts[rng.IntN(len(prompts))]
					p = grow(base[:rng.IntN(len(base)+1)])
				} else {
					p = grow(nil)
				}
				prompts = append(prompts, p)
				// The caller's slice is reused once add returns (a
				// decision's hashes are recycled): the index must not
				// keep it.
				arg := slices.Clone(p)
				key := f.newKey()
				f.add(key, arg)
				clear(arg)
				m.regs = append(m.regs, naiveReg{key, p})
			case op < 6 && len(m.regs) > 0: // one leaves
				i := rng.IntN(len(m.regs))
				f.remove(m.regs[i].key)
				m.regs = append(m.regs[:i], m.regs[i+1:]...)
			default: // a question
				base := prompts[rng.IntN(len(prompts))]
				q := grow(base[:rng.IntN(len(base)+1)])
				held := rng.IntN(len(q) + 1)
				gk, gd := f.leader(q, held)
				wk, wd := m.leader(q, held)
				if gk != wk || gd != wd {
					t.Fatalf("seed %d: leader = %d at %d, naive %d at %d", seed, gk, gd, wk, wd)
				}
			}
		}
		for _, r := range m.regs {
			f.remove(r.key)
		}
		if len(f.at) != 0 || len(f.blocks) != 0 {
			t.Fatalf("seed %d: %d blocks left indexed after every request left", seed, len(f.at))
		}
	}
}

// BenchmarkFollowIndex measures what following costs a request that
// passes flow control while others wait: the question for its leader, its
// prompt indexed and dropped again, with 200 prompts of 770 blocks (the
// conversation trace's mean, 12k tokens) indexed.
func BenchmarkFollowIndex(b *testing.B) {
	f := newFollowIndex()
	next := blockhash.Hash(1)
	prompt := func() []blockhash.Hash {
		p := make([]blockhash.Hash, 770)
		for i := range p {
			p[i] = next
			next++
		}
		return p
	}
	for range 200 {
		f.add(f.newKey(), prompt())
	}
	q := prompt()
	b.ReportAllocs()
	for range b.N {
		f.leader(q, 0)
		k := f.newKey()
		f.add(k, q)
		f.remove(k)
	}
}
