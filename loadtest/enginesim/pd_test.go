package enginesim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
)

// TestPrefillDecode runs the disaggregated flow as a router does: the
// prefill leg (openai.PrefillBody) on a prefill pod, then the decode leg
// (openai.DecodeBody with the returned kv_transfer_params) streamed from a
// decode pod, which must skip the transferred prefill and cache the blocks.
func TestPrefillDecode(t *testing.T) {
	fc := DefaultFleetConfig()
	fc.Pods = 2
	fc.Pod = testConfig()
	fc.Roles = []Role{RolePrefill, RoleDecode}
	fleet, err := StartFleet(fc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	pre, dec := fleet.Pod(0), fleet.Pod(1)

	prompt := tokens(42, 150) // 9 full blocks and a partial one
	orig, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 6, "stream": true, "stream_options": map[string]bool{"include_usage": true}})
	preBody, err := openai.PrefillBody(orig)
	if err != nil {
		t.Fatal(err)
	}
	pr := post(t, pre, openai.PathCompletions, preBody)
	pc := decodeCompletion(t, pr)
	if pc.Usage.CompletionTokens != 1 {
		t.Errorf("prefill leg: got %d completion tokens, want 1", pc.Usage.CompletionTokens)
	}
	var kv struct {
		DoRemotePrefill bool    `json:"do_remote_prefill"`
		DoRemoteDecode  bool    `json:"do_remote_decode"`
		RemoteEngineID  string  `json:"remote_engine_id"`
		RemoteBlockIDs  []int64 `json:"remote_block_ids"`
		RemoteHost      string  `json:"remote_host"`
		RemotePort      int     `json:"remote_port"`
	}
	params, err := openai.KVTransferParams(pr.body)
	if err != nil || json.Unmarshal(params, &kv) != nil {
		t.Fatalf("prefill leg: kv_transfer_params %s do not decode: %v", params, err)
	}
	if !kv.DoRemotePrefill || kv.DoRemoteDecode || kv.RemoteEngineID != pre.ID() || len(kv.RemoteBlockIDs) != 10 ||
		kv.RemoteHost+":"+strconv.Itoa(kv.RemotePort) != pre.HTTPAddr() {
		t.Errorf("prefill leg: got kv_transfer_params %s, want do_remote_prefill, engine %s, 10 block ids, %s", params, pre.ID(), pre.HTTPAddr())
	}
	if got := pr.header.Get(HeaderPrefillTokens); got != "150" {
		t.Errorf("prefill leg: got %s prefill tokens, want 150", got)
	}

	decBody, err := openai.DecodeBody(orig, params)
	if err != nil {
		t.Fatal(err)
	}
	dr := post(t, dec, openai.PathCompletions, decBody)
	if dr.status != http.StatusOK {
		t.Fatalf("decode leg: got status %d (%s), want 200", dr.status, dr.body)
	}
	if got := dr.header.Get(HeaderPrefillTokens); got != "0" {
		t.Errorf("decode leg: got %s prefill tokens, want 0 (all transferred)", got)
	}
	evs := readSSE(t, dr.body)
	if n := len(evs); n != 6+2 || !evs[n-1].done {
		t.Fatalf("decode leg: got %d events, want 6 token chunks, a usage chunk and [DONE]", n)
	}
	s := dec.Stats()
	if s.TransferredTokens != 150 || s.CacheBlocks != 9 || s.CachedTokens != 0 {
		t.Errorf("decode pod: got stats %+v, want 150 transferred tokens, 9 cached blocks, 0 hit", s)
	}
	// The decode pod now serves the same prompt from its own cache.
	again := decodeCompletion(t, post(t, dec, openai.PathCompletions, map[string]any{"prompt": prompt, "max_tokens": 1}))
	if got := again.Usage.PromptTokensDetails.CachedTokens; got != 144 {
		t.Errorf("decode pod, plain request: got cached_tokens %d, want 144", got)
	}
	// The prefill pod holds the blocks too.
	if got := len(pre.CachedBlocks()); got != 9 {
		t.Errorf("prefill pod: got %d cached blocks, want 9", got)
	}
	// Each pod refuses the other leg.
	if r := post(t, pre, openai.PathCompletions, decBody); r.status != http.StatusBadRequest {
		t.Errorf("decode leg on the prefill pod: got status %d, want 400", r.status)
	}
	if r := post(t, dec, openai.PathCompletions, preBody); r.status != http.StatusBadRequest {
		t.Errorf("prefill leg on the decode pod: got status %d, want 400", r.status)
	}
}
