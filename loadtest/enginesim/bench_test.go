package enginesim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// BenchmarkCompletion serves a non-streamed 2048-token completion (16
// output tokens) at time scale 0 through the handler, half of the prompt a
// cache hit: parsing, hashing, cache admission, event encoding (a fake
// publisher) and the answer.
func BenchmarkCompletion(b *testing.B) {
	cfg := testConfig()
	cfg.HTTPAddr = ""
	p, err := NewPod(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	p.cache.pub = &encodingPublisher{}
	var toks []uint32
	for id := range uint64(4) {
		toks = trace.AppendTokens(toks, id)
	}
	bodies := make([][]byte, 64)
	for i := range bodies {
		prompt := append(append([]uint32(nil), toks[:1024]...), trace.AppendTokens(nil, uint64(1000+i))...)
		prompt = append(prompt, trace.AppendTokens(nil, uint64(2000+i))...)
		bodies[i], _ = json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 16})
	}
	h := p.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, openai.PathCompletions, bytes.NewReader(bodies[i%len(bodies)])))
		if rec.Code != http.StatusOK {
			b.Fatalf("got status %d: %s", rec.Code, rec.Body.Bytes())
		}
	}
}

// BenchmarkTokenizer tokenises a 1000-word text.
func BenchmarkTokenizer(b *testing.B) {
	text := words("w", 1000)
	tok := Tokenizer{Vocab: trace.Vocab}
	var dst []uint32
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		dst = tok.Encode(text, true, dst[:0])
	}
}

// encodingPublisher encodes batches as vllmpub does, without sockets.
type encodingPublisher struct {
	buf []byte
	seq uint64
}

// Publish encodes b into a reused buffer.
func (e *encodingPublisher) Publish(b *events.Batch) (uint64, error) {
	var err error
	e.buf, err = vllmwire.EncodePayload(e.buf[:0], b, vllmwire.FormArray)
	e.seq++
	return e.seq - 1, err
}
