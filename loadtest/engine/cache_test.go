package engine

import (
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

func hs(v ...uint64) []blockhash.Hash {
	out := make([]blockhash.Hash, len(v))
	for i, x := range v {
		out[i] = blockhash.Hash(x)
	}
	return out
}

func TestAdmitScenarios(t *testing.T) {
	type req struct {
		now             int64
		chain           []blockhash.Hash
		matched         int
		stored, removed []blockhash.Hash
	}
	tests := []struct {
		name     string
		capacity int
		reqs     []req
	}{
		{
			name: "prefix hit stores only the rest", capacity: 10,
			reqs: []req{
				{1, hs(1, 2, 3), 0, hs(1, 2, 3), nil},
				{2, hs(1, 2, 4), 2, hs(4), nil},
				{3, hs(1, 2, 4), 3, nil, nil},
			},
		},
		{
			name: "lru leaf evicted first, deeper first on ties", capacity: 4,
			reqs: []req{
				{1, hs(1, 2, 3), 0, hs(1, 2, 3), nil},
				{2, hs(5), 0, hs(5), nil},
				// Full: 3 (oldest leaf) goes, then 2 becomes the oldest leaf.
				{3, hs(6, 7), 0, hs(6, 7), hs(3, 2)},
			},
		},
		{
			name: "own path never evicted; long chain truncated", capacity: 3,
			reqs: []req{
				{1, hs(1, 2, 3, 4, 5), 0, hs(1, 2, 3), nil},
				{2, hs(9), 0, hs(9), hs(3)},
			},
		},
		{
			name: "touched prefix outlives older leaves", capacity: 4,
			reqs: []req{
				{1, hs(1, 2), 0, hs(1, 2), nil},
				{2, hs(7, 8), 0, hs(7, 8), nil},
				{3, hs(1, 2), 2, nil, nil},
				{4, hs(1, 3), 1, hs(3), hs(8)},
			},
		},
		{
			name: "interior block of a sibling branch is kept", capacity: 3,
			reqs: []req{
				{1, hs(1, 2), 0, hs(1, 2), nil},
				{2, hs(1, 3), 1, hs(3), nil},
				// Leaves 2 (t1) and 3 (t2); 1 is interior.
				{3, hs(1, 4), 1, hs(4), hs(2)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache(tt.capacity)
			for i, r := range tt.reqs {
				ad := c.Admit(r.now, r.chain, nil)
				if ad.Matched != r.matched || !slices.Equal(ad.Stored, r.stored) || !slices.Equal(ad.Removed, r.removed) {
					t.Errorf("request %d: got matched %d stored %v removed %v, want %d %v %v",
						i, ad.Matched, ad.Stored, ad.Removed, r.matched, r.stored, r.removed)
				}
			}
		})
	}
}

func TestResetAndLookup(t *testing.T) {
	c := NewCache(8)
	c.Admit(1, hs(1, 2, 3), nil)
	if got := c.Lookup(hs(1, 2, 9)); got != 2 {
		t.Errorf("Lookup got %d, want 2", got)
	}
	if !c.Contains(3) || c.Len() != 3 {
		t.Errorf("got Contains(3) %v Len %d, want true 3", c.Contains(3), c.Len())
	}
	c.Reset()
	if c.Len() != 0 || c.Lookup(hs(1)) != 0 {
		t.Errorf("after Reset got Len %d, want 0", c.Len())
	}
	ad := c.Admit(2, hs(1, 2), nil)
	if len(ad.Stored) != 2 {
		t.Errorf("after Reset Admit stored %v, want 2 blocks", ad.Stored)
	}
}

func TestNewCachePanicsOnBadCapacity(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewCache(0) did not panic")
		}
	}()
	NewCache(0)
}

// TestPlaces checks that evictions and PlaceOf report each block's position
// and the first block of its page.
func TestPlaces(t *testing.T) {
	c := NewCache(6)
	c.SetPageSize(2)
	chain := hs(1, 2, 3, 4, 5)
	c.Admit(1, chain, nil)
	for i, h := range chain {
		p, ok := c.PlaceOf(h, 2)
		if want := (Place{Pos: int32(i), Page: chain[i-i%2]}); !ok || p != want {
			t.Errorf("PlaceOf(%v) = %+v, %v; want %+v", h, p, ok, want)
		}
	}
	if _, ok := c.PlaceOf(hs(9)[0], 2); ok {
		t.Error("PlaceOf of a block not cached: ok")
	}
	// A second chain evicts the first one's leaves, deepest first.
	ad := c.Admit(2, hs(6, 7, 8), nil)
	if len(ad.Removed) != 2 || len(ad.RemovedPlaces) != 2 {
		t.Fatalf("removed %v places %v, want two of each", ad.Removed, ad.RemovedPlaces)
	}
	for i, h := range ad.Removed {
		pos := int32(slices.Index(chain, h))
		if want := (Place{Pos: pos, Page: chain[pos-pos%2]}); ad.RemovedPlaces[i] != want {
			t.Errorf("removed %v at %+v, want %+v", h, ad.RemovedPlaces[i], want)
		}
	}
}
