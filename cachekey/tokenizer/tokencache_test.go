package tokenizer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// refLRU is the reference model of one shard: keys from least to most
// recently used, with their ids.
type refLRU struct {
	order []CacheKey
	ids   map[CacheKey][]uint32
	bytes int64
	max   int64
}

func (r *refLRU) touch(k CacheKey) {
	i := slices.Index(r.order, k)
	r.order = append(slices.Delete(r.order, i, i+1), k)
}

func (r *refLRU) get(k CacheKey) ([]uint32, bool) {
	ids, ok := r.ids[k]
	if ok {
		r.touch(k)
	}
	return ids, ok
}

func (r *refLRU) put(k CacheKey, ids []uint32) {
	cost := int64(4*len(ids) + entryOverhead)
	if cost > r.max {
		return
	}
	if old, ok := r.ids[k]; ok {
		r.bytes -= int64(4*len(old) + entryOverhead)
		i := slices.Index(r.order, k)
		r.order = slices.Delete(r.order, i, i+1)
		delete(r.ids, k)
	}
	for r.bytes+cost > r.max && len(r.order) > 0 {
		v := r.order[0]
		r.order = r.order[1:]
		r.bytes -= int64(4*len(r.ids[v]) + entryOverhead)
		delete(r.ids, v)
	}
	r.ids[k] = slices.Clone(ids)
	r.order = append(r.order, k)
	r.bytes += cost
}

// TestTokenCacheMatchesReference runs random gets and puts against the
// cache and a naive per-shard LRU, and compares every answer and the size.
func TestTokenCacheMatchesReference(t *testing.T) {
	for _, maxBytes := range []int64{cacheShards * 200, cacheShards * 1000, 1 << 20} {
		t.Run(fmt.Sprint(maxBytes), func(t *testing.T) {
			c := NewTokenCache(maxBytes)
			refs := make([]*refLRU, cacheShards)
			for i := range refs {
				refs[i] = &refLRU{ids: map[CacheKey][]uint32{}, max: maxBytes / cacheShards}
			}
			rng := rand.New(rand.NewPCG(1, uint64(maxBytes)))
			var hits, misses uint64
			for op := 0; op < 20000; op++ {
				k := CacheKey{Hi: 7, Lo: uint64(rng.IntN(200))}
				ref := refs[k.Lo%cacheShards]
				if rng.IntN(2) == 0 {
					ids := make([]uint32, rng.IntN(60))
					for i := range ids {
						ids[i] = uint32(op + i)
					}
					c.Put(k, ids)
					ref.put(k, ids)
					continue
				}
				got, ok := c.Get(k, []uint32{99})
				want, wantOK := ref.get(k)
				if ok != wantOK || (ok && !slices.Equal(got, append([]uint32{99}, want...))) {
					t.Fatalf("op %d: Get(%v) = %v, %v; want %v, %v", op, k, got, ok, want, wantOK)
				}
				if ok {
					hits++
				} else {
					misses++
				}
			}
			st := c.Stats()
			var bytes int64
			entries := 0
			for _, r := range refs {
				bytes += r.bytes
				entries += len(r.ids)
			}
			if st.Hits != hits || st.Misses != misses || st.Bytes != bytes || st.Entries != entries {
				t.Fatalf("Stats() = %+v, want hits %d misses %d bytes %d entries %d", st, hits, misses, bytes, entries)
			}
			if st.Bytes > maxBytes {
				t.Fatalf("cache holds %d bytes, bound %d", st.Bytes, maxBytes)
			}
		})
	}
}

// TestTokenCacheCopies checks that the cache keeps its own copy of the ids
// it is given and hands out copies.
func TestTokenCacheCopies(t *testing.T) {
	c := NewTokenCache(1 << 20)
	k := KeyOf(0, "x")
	ids := []uint32{1, 2, 3}
	c.Put(k, ids)
	ids[0] = 9
	got, _ := c.Get(k, nil)
	got[1] = 9
	again, ok := c.Get(k, nil)
	if !ok || !slices.Equal(again, []uint32{1, 2, 3}) {
		t.Fatalf("got %v, %v; want [1 2 3], true", again, ok)
	}
}

// TestTokenCacheNil checks that a nil cache (caching off) is usable.
func TestTokenCacheNil(t *testing.T) {
	c := NewTokenCache(0)
	if c != nil {
		t.Fatalf("NewTokenCache(0) = %v, want nil", c)
	}
	c.Put(KeyOf(0, "a"), []uint32{1})
	if got, ok := c.Get(KeyOf(0, "a"), []uint32{5}); ok || !slices.Equal(got, []uint32{5}) {
		t.Fatalf("nil Get = %v, %v; want [5], false", got, ok)
	}
	if st := c.Stats(); st != (CacheStats{}) {
		t.Fatalf("nil Stats = %+v, want zero", st)
	}
}

// TestTokenCacheConcurrent hammers one cache from several goroutines (run
// with -race); every hit must return the ids stored for its key.
func TestTokenCacheConcurrent(t *testing.T) {
	c := NewTokenCache(64 << 10)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for i := 0; i < 5000; i++ {
				n := rng.IntN(500)
				k := CacheKey{Lo: uint64(n)}
				want := []uint32{uint32(n), uint32(n) * 3}
				if got, ok := c.Get(k, nil); ok && !slices.Equal(got, want) {
					t.Errorf("Get(%d) = %v, want %v", n, got, want)
					return
				}
				c.Put(k, want)
			}
		}()
	}
	wg.Wait()
}

// TestSegmentCacheEncodesAlike checks that a tokenizer with a segment
// cache encodes every golden input and chat exactly as one without, on the
// first (miss) and second (hit) encoding, and that conversation turns hit.
func TestSegmentCacheEncodesAlike(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			plain := loadFixture(t, fx.name, Options{})
			cache := NewTokenCache(1 << 20)
			cached := loadFixture(t, fx.name, Options{Segments: cache})
			inputs := goldenInputs(t, fx.name)
			long := strings.Repeat("The router reads the prompt and hashes its blocks. ", 8)
			inputs = append(inputs, long, "<|im_start|>user\n"+long+"<|im_end|>\n<|im_start|>assistant\n", long+"<|endoftext|>"+long)
			for round := 0; round < 2; round++ {
				for _, in := range inputs {
					for _, special := range []bool{false, true} {
						want := plain.EncodeString(in, special, nil)
						if got := cached.EncodeString(in, special, []uint32{}); !slices.Equal(got, want) {
							t.Fatalf("round %d: cached Encode(%q, %v) = %v, want %v", round, in, special, got, want)
						}
					}
				}
			}
			if st := cache.Stats(); st.Hits == 0 {
				t.Fatalf("no segment hit on the second round: %+v", st)
			}
		})
	}
}

// goldenInputs returns the texts of a fixture's golden file.
func goldenInputs(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name + ".golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cases {
		out = append(out, c.Text)
	}
	return out
}
