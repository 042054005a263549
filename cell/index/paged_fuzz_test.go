package index

import (
	"math/rand/v2"
	"testing"
)

// FuzzPagedMatchesBlock drives the two layouts with the same writes, taken
// from the fuzzer's bytes, over a deep prefix tree whose chains cross pages
// and branch inside them, and checks that every query answers alike for
// every pod and that both hold the same blocks. The block layout is itself
// checked against the naive model (TestMatchesReferenceModel), so this
// looks for what only the paged structure can get wrong: bucket growth and
// shrinking, entries moved by deletions, the directory's summary, pages
// deleted and recreated, sweeps.
func FuzzPagedMatchesBlock(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0x10, 0x90, 0x23, 0xa7, 0x41, 0xff, 0x00, 0x3c, 0x55, 0x81, 0x12, 0x34})
	f.Fuzz(func(t *testing.T, data []byte) {
		rng := rand.New(rand.NewPCG(uint64(len(data)), 5))
		tr := newTreeShape(rng, 3*PageSize+40, true)
		var ixs [2]*Index
		for i, lay := range testLayouts {
			cfg := DefaultConfig()
			cfg.Layout = lay
			ixs[i] = newTestIndex(t, cfg)
			for p := 0; p < 8; p++ {
				ixs[i].Register("pod-" + itoa(p))
			}
		}
		var r0, r1 MatchResult
		for k := 0; k+1 < len(data); k += 2 {
			op, arg := data[k], int(data[k+1])
			s := Slot(op & 7)
			node := arg * len(tr.hash) / 256
			var ops []Op
			switch op >> 3 & 7 {
			case 0, 1, 2: // store a path's prefix
				p := tr.path(node)
				ops = chainOps(OpStore, s, p, 0, len(p))
			case 3, 4: // remove a node's subtree
				ops = tr.placeOps(OpRemove, s, tr.subtree(node))
			case 5:
				for _, ix := range ixs {
					ix.ClearPod(s)
				}
			case 6:
				for _, ix := range ixs {
					ix.Kill(s)
					ix.WaitSweeps()
					ix.Register("pod-" + itoa(int(op)) + "-" + itoa(k))
				}
			default: // query
				chain := tr.path(node)
				ixs[0].Match(chain, &r0)
				ixs[1].Match(chain, &r1)
				for p := 0; p < MaxPods; p++ {
					if a, b := r0.Depth(Slot(p)), r1.Depth(Slot(p)); a != b {
						t.Fatalf("op %d: pod %d: block layout depth %d, paged %d", k/2, p, a, b)
					}
				}
			}
			for _, ix := range ixs {
				ix.Apply(ops)
			}
		}
		d0, d1 := ixs[0].Dump(), ixs[1].Dump()
		if len(d0) != len(d1) {
			t.Fatalf("block layout holds %d blocks, paged %d", len(d0), len(d1))
		}
		for i := range d0 {
			if d0[i].Hash != d1[i].Hash || d0[i].Holders != d1[i].Holders {
				t.Fatalf("Dump[%d]: block layout %+v, paged %+v", i, d0[i], d1[i])
			}
		}
	})
}
