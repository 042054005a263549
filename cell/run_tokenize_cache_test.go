package cell

import (
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
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

// BenchmarkTokenCacheHit is the cost a cached remote tokenization pays
// instead of a /tokenize round trip: hashing a 4 KiB prompt and the lookup.
func BenchmarkTokenCacheHit(b *testing.B) {
	text := make([]byte, 4096)
	for i := range text {
		text[i] = byte('a' + i%26)
	}
	req := &pipeline.Request{Model: "m", Prompt: string(text)}
	c := tokenizer.NewTokenCache(remoteTokenCacheBytes)
	c.Put(keyOf(req), make([]uint32, 1024))
	dst := make([]uint32, 0, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		var ok bool
		if dst, ok = c.Get(keyOf(req), dst[:0]); !ok {
			b.Fatal("miss")
		}
	}
}
