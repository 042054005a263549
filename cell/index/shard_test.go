package index

import (
	"math/rand/v2"
	"testing"
)

// TestShardMatchesMap drives one shard's table (growth, shrinking,
// backward-shift deletion across the array's wrap-around, inline and
// overflow holder words) against a map from key to holder bitmap, both
// from the smallest table and from a reserved size it must never go below
// (Config.ExpectedBlocks).
func TestShardMatchesMap(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		reserved := []int{0, 512}[seed%2]
		var s shard
		s.init(reserved)
		ref := map[uint64]HostBitmap{}
		// A small key space makes probe runs long and wrap often.
		keys := make([]uint64, 300)
		for i := range keys {
			keys[i] = rng.Uint64() | 1
		}
		for step := 0; step < 60000; step++ {
			k := keys[rng.IntN(len(keys))]
			sl := Slot(rng.IntN(12)) // > maxInline holders on some keys
			s.beginWrite()
			if rng.IntN(2) == 0 {
				if _, _, ok := s.store(k, sl, nil); !ok {
					t.Fatal("store refused without a reserver")
				}
				ref[k] = ref[k].Set(sl)
			} else {
				s.remove(k, sl)
				if b := ref[k].Clear(sl); b.IsEmpty() {
					delete(ref, k)
				} else {
					ref[k] = b
				}
			}
			s.endWrite()
			if step%97 == 0 {
				for _, k := range keys {
					if got, want := s.holders(k), ref[k]; got != want {
						t.Fatalf("seed %d step %d: holders(%x) = %v, want %v", seed, step, k, got, want)
					}
				}
				if s.count != len(ref) {
					t.Fatalf("seed %d step %d: count = %d, want %d", seed, step, s.count, len(ref))
				}
				if sz := s.tab.Load().size(); sz < reserved {
					t.Fatalf("seed %d step %d: table shrank to %d below the reserved %d", seed, step, sz, reserved)
				}
			}
		}
		// Sweeping two slots out equals removing them from every entry.
		dead := BitmapOf(3, 9)
		s.beginWrite()
		s.sweep(dead)
		s.endWrite()
		for k, b := range ref {
			if b = b.AndNot(dead); b.IsEmpty() {
				delete(ref, k)
			} else {
				ref[k] = b
			}
		}
		for _, k := range keys {
			if got, want := s.holders(k), ref[k]; got != want {
				t.Fatalf("seed %d after sweep: holders(%x) = %v, want %v", seed, k, got, want)
			}
		}
		if sz := s.tab.Load().size(); sz < reserved {
			t.Fatalf("seed %d: sweep shrank the table to %d below the reserved %d", seed, sz, reserved)
		}
	}
}

func TestHolderWord(t *testing.T) {
	w := uint64(0)
	var ref HostBitmap
	for _, s := range []Slot{5, 200, 0, 63, 64, 255, 17} {
		w = inlineAdd(w, s)
		ref = ref.Set(s)
		if got := inlineBitmap(w); got != ref {
			t.Fatalf("after add %d: got %v, want %v", s, got, ref)
		}
	}
	for _, s := range []Slot{0, 255, 5, 17, 200, 63, 64} {
		w = inlineRemove(w, s)
		ref = ref.Clear(s)
		if got := inlineBitmap(w); got != ref {
			t.Fatalf("after remove %d: got %v, want %v", s, got, ref)
		}
	}
	if w != 0 {
		t.Fatalf("empty word = %x, want 0", w)
	}
	if got := inlineFromBitmap(BitmapOf(1, 2, 250)); inlineBitmap(got) != BitmapOf(1, 2, 250) {
		t.Fatalf("inlineFromBitmap round trip = %v", inlineBitmap(got))
	}
}
