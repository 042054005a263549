package cell

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// remoteTokenCacheBytes bounds what the cell keeps of remote /tokenize
// answers (tokenizer.TokenCache: about a million token ids). A remote call
// costs a round trip to a pod (about 2 ms), so a prompt seen again (a
// retried request, a probe followed by its hand-off, a repeated system
// prompt) skips it.
const remoteTokenCacheBytes = 4 << 20

// tokenKey identifies a tokenization: a 128-bit hash of the model, the
// kind (prompt or chat) and the text, so the cache holds no prompt text.
type tokenKey = tokenizer.CacheKey

// keyOf hashes what decides a request's token ids. Every variable-length
// part is length-prefixed, so two different requests never write the same
// byte stream.
func keyOf(req *pipeline.Request) tokenKey {
	h := xxh3.New()
	var n [9]byte
	str := func(s string) {
		binary.LittleEndian.PutUint64(n[:8], uint64(len(s)))
		h.Write(n[:8])
		h.WriteString(s)
	}
	str(req.Model)
	if req.Chat {
		n[8] = 1
	} else {
		n[8] = 0
	}
	h.Write(n[8:9])
	if !req.Chat {
		str(req.Prompt)
		return sum128(h)
	}
	binary.LittleEndian.PutUint64(n[:8], uint64(len(req.Messages)))
	h.Write(n[:8])
	for _, m := range req.Messages {
		str(m.Role)
		str(m.Content)
	}
	return sum128(h)
}

// sum128 returns h's 128-bit digest as a cache key.
func sum128(h *xxh3.Hasher) tokenKey {
	d := h.Sum128()
	return tokenKey{Hi: d.Hi, Lo: d.Lo}
}
