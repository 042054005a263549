package cell

import (
	"fmt"
	"testing"

	"github.com/cellrouter/cellrouter/cell/pipeline"
)

func TestTokenKeyTellsRequestsApart(t *testing.T) {
	reqs := []*pipeline.Request{
		{Model: "m", Prompt: "ab"},
		{Model: "m", Prompt: "abc"},
		{Model: "n", Prompt: "ab"},
		{Model: "ma", Prompt: "b"}, // model and prompt run together the same way
		{Model: "m", Chat: true, Messages: []pipeline.Message{{Role: "user", Content: "ab"}}},
		{Model: "m", Chat: true, Messages: []pipeline.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}},
		{Model: "m", Chat: true, Messages: []pipeline.Message{{Role: "user", Content: "a"}, {Role: "userb", Content: ""}}},
		{Model: "m", Chat: true, Messages: []pipeline.Message{{Role: "system", Content: "ab"}}},
		{Model: "m", Chat: true},
	}
	seen := map[tokenKey]int{}
	for i, r := range reqs {
		k := keyOf(r)
		if j, dup := seen[k]; dup {
			t.Errorf("requests %d and %d share a key", j, i)
		}
		seen[k] = i
		if again := keyOf(r); again != k {
			t.Errorf("request %d: key not stable", i)
		}
	}
}

func TestTokenCacheEvictsLeastRecentlyUsedWithinBudget(t *testing.T) {
	key := func(i int) tokenKey { return keyOf(&pipeline.Request{Model: "m", Prompt: fmt.Sprint(i)}) }
	ids := func(n int) []uint32 { return make([]uint32, n) }
	c := newTokenCache(10)
	c.put(key(1), ids(4))
	c.put(key(2), ids(4))
	if _, ok := c.get(key(1)); !ok { // 1 is now the most recently used
		t.Fatal("entry 1 missing")
	}
	c.put(key(3), ids(4)) // 12 > 10: evicts 2, the least recently used
	tests := []struct {
		key  int
		want bool
	}{{1, true}, {2, false}, {3, true}}
	for _, tt := range tests {
		if _, got := c.get(key(tt.key)); got != tt.want {
			t.Errorf("get(%d) found %v, want %v", tt.key, got, tt.want)
		}
	}
	if c.used != 8 {
		t.Errorf("used %d ids, want 8", c.used)
	}
	c.put(key(4), ids(11)) // larger than the budget: not kept, nothing evicted
	if _, ok := c.get(key(4)); ok || c.used != 8 {
		t.Errorf("an over-budget entry was kept (used %d)", c.used)
	}
	off := newTokenCache(0)
	off.put(key(1), ids(1))
	if _, ok := off.get(key(1)); ok {
		t.Error("a disabled cache answered")
	}
}

// BenchmarkTokenCacheHit is the cost a cached remote tokenization pays
// instead of a /tokenize round trip: hashing a 4 KiB prompt and the lookup.
func BenchmarkTokenCacheHit(b *testing.B) {
	text := make([]byte, 4096)
	for i := range text {
		text[i] = byte('a' + i%26)
	}
	req := &pipeline.Request{Model: "m", Prompt: string(text)}
	c := newTokenCache(remoteTokenCacheTokens)
	c.put(keyOf(req), make([]uint32, 1024))
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, ok := c.get(keyOf(req)); !ok {
			b.Fatal("miss")
		}
	}
}
