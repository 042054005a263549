package enginesim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
)

// fuzzPaths are the POST endpoints the fuzzer sends bodies to.
var fuzzPaths = []string{openai.PathCompletions, openai.PathChatCompletions, PathTokenize}

// FuzzHandler sends arbitrary bodies to the request handlers: the answer is
// 200 or a 4xx with an OpenAI error body, never a panic or a 5xx.
func FuzzHandler(f *testing.F) {
	seeds := []string{
		`{"prompt":"hello world","max_tokens":3}`,
		`{"prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":[[1,2],[3]]}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":2}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"add_generation_prompt":false}`,
		`{"prompt":"a","kv_transfer_params":{"do_remote_decode":true}}`,
		`{"prompt":"a","kv_transfer_params":{"do_remote_prefill":true,"remote_block_ids":[1,2,3],"remote_engine_id":"x"}}`,
		`{"prompt":"a","kv_transfer_params":{"remote_block_ids":"no"}}`,
		`{"prompt":"<|bos|><|user|> x <|eos","add_special_tokens":null}`,
		`{"model":"other","prompt":"a"}`,
		`{"prompt":"a","max_tokens":-1}`,
		`{"prompt":"a","max_tokens":1e3}`,
		`{"prompt":"a"}{}`,
		`[]`, `null`, `"x"`, ``, `{`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	cfg := testConfig()
	cfg.HTTPAddr = ""
	cfg.MaxModelLen = 4096
	cfg.Blocks = 64
	p, err := NewPod(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = p.Close() })
	h := p.Handler()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		path := fuzzPaths[int(which)%len(fuzzPaths)]
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		switch {
		case rec.Code == http.StatusOK:
		case rec.Code >= 400 && rec.Code < 500:
			var eb openai.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Message == "" {
				t.Fatalf("%s %q: got status %d body %q, want an OpenAI error body", path, body, rec.Code, rec.Body.Bytes())
			}
		default:
			t.Fatalf("%s %q: got status %d (%s), want 200 or 4xx", path, body, rec.Code, rec.Body.Bytes())
		}
	})
}
