package cell

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// promptTokens is a 64-block (16-token blocks) token-array prompt.
func promptTokens(salt uint32) []uint32 {
	out := make([]uint32, 64*16)
	for i := range out {
		out[i] = salt*7919 + uint32(i)
	}
	return out
}

// holdPrefix makes pod hold the first blocks of toks, through the event
// applier as an engine's BlockStored would.
func holdPrefix(t *testing.T, c *Cell, pod string, toks []uint32, blocks int) {
	t.Helper()
	h := blockhash.DefaultHasher()
	engine := h.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil) // engine names; any stable ids do
	hashes := make([]uint64, blocks)
	for i := range hashes {
		hashes[i] = uint64(engine[i])
	}
	b := &events.Batch{Pod: pod, Model: "m", DPRank: -1, Seq: 0, Events: []events.Event{{
		Kind: events.KindBlockStored, BlockHashes: hashes, TokenIDs: toks[:blocks*16], BlockSize: 16}}}
	if err := c.Applier().ApplyBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	c.router.invalidate()
}

func completion(t *testing.T, base string, toks []uint32, stream bool, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 16, "stream": stream})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func cellWithPods(t *testing.T, pods []*fakePod, mod func(*Config)) *Cell {
	t.Helper()
	cfg := testConfig()
	for _, p := range pods {
		cfg.Pods = append(cfg.Pods, PodConfig{ID: p.id, Address: p.addr(), KVBlocks: 10000})
	}
	if mod != nil {
		mod(&cfg)
	}
	c := startCell(t, cfg)
	waitFor(t, "healthz", func() bool { code, _ := get(t, "http://"+c.HTTPAddr()+"/healthz"); return code == 200 })
	return c
}

func TestRoutesToLongestPrefix(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b"), newFakePod(t, "c")}
	c := cellWithPods(t, pods, nil)
	toks := promptTokens(1)
	holdPrefix(t, c, "a", toks, 10)
	holdPrefix(t, c, "b", toks, 50)
	holdPrefix(t, c, "c", toks, 20)
	resp, body := completion(t, "http://"+c.HTTPAddr(), toks, false, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "hello from b") {
		t.Fatalf("got %d %s, want pod b's answer", resp.StatusCode, body)
	}
	hint := pods[1].last().header.Get(CacheHintHeader)
	if !strings.Contains(hint, "tier=gpu") || !strings.Contains(hint, "blocks=50") {
		t.Fatalf("cache hint %q, want tier=gpu and blocks=50", hint)
	}
	_, metrics := get(t, "http://"+c.HTTPAddr()+"/metrics")
	for _, want := range []string{"cellrouter_route_decisions_total", `cellrouter_route_realised_cached_tokens_total{cell="cell-0"} 48`,
		`cellrouter_route_predicted_cached_tokens_total{cell="cell-0"} 800`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestLoadSpreadsAcrossEqualPods(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b"), newFakePod(t, "c"), newFakePod(t, "d")}
	c := cellWithPods(t, pods, nil)
	// 80 requests over 4 equal pods: each gets 20 on average; fewer than 5
	// by chance has a probability around 1e-6.
	for i := 0; i < 80; i++ {
		if resp, body := completion(t, "http://"+c.HTTPAddr(), promptTokens(uint32(100+i)), false, nil); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	for _, p := range pods {
		if n := p.count(); n < 5 {
			t.Fatalf("pod %s got %d of 80 requests with no cache anywhere", p.id, n)
		}
	}
}

func TestStreamRelayedAndRetriedBeforeFirstByte(t *testing.T) {
	good := newFakePod(t, "good")
	bad := newFakePod(t, "bad")
	bad.fail = true
	c := cellWithPods(t, []*fakePod{bad, good}, nil)
	toks := promptTokens(2)
	holdPrefix(t, c, "bad", toks, 60) // the best pick fails: the request must move
	resp, body := completion(t, "http://"+c.HTTPAddr(), toks, true, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	if bad.count() != 1 || !strings.Contains(body, "good-0") || !strings.Contains(body, "[DONE]") {
		t.Fatalf("bad pod tried %d times; body %q", bad.count(), body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
}

func TestCancellationReachesPod(t *testing.T) {
	p := newFakePod(t, "slow")
	p.hold = true
	c := cellWithPods(t, []*fakePod{p}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": promptTokens(3), "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.HTTPAddr()+"/v1/completions", strings.NewReader(string(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n') // the first chunk arrived
	if err != nil || !strings.Contains(line, "slow-0") {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-p.cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("the pod's request was not cancelled after the client went away")
	}
	waitFor(t, "load released", func() bool { return c.router.tracker.Usage("slow").Requests == 0 })
}

func TestDisaggregatedThroughCell(t *testing.T) {
	pre, dec := newFakePod(t, "pre"), newFakePod(t, "dec")
	c := cellWithPods(t, []*fakePod{pre, dec}, func(cfg *Config) {
		cfg.Pods[0].Role, cfg.Pods[1].Role = "prefill", "decode"
		p := cfg.Routing
		p.Profiles = []pipeline.ProfileConfig{
			{Name: "p", Role: "prefill", Prepare: []pipeline.PluginSpec{{Type: "tokens"}, {Type: "block-hashes"}, {Type: "prefix-match"}},
				Filter: []pipeline.PluginSpec{{Type: "healthy"}, {Type: "role"}},
				Score:  []pipeline.PluginSpec{{Type: "kv-cost", Weight: 1}}, Pick: pipeline.PluginSpec{Type: "softmax"}},
			{Name: "d", Role: "decode", Filter: []pipeline.PluginSpec{{Type: "healthy"}, {Type: "role"}},
				Score: []pipeline.PluginSpec{{Type: "least-load", Weight: 1}}, Pick: pipeline.PluginSpec{Type: "max-score"}},
		}
		p.PrefillProfile, p.DecodeProfile = "p", "d"
		cfg.Routing = p
	})
	resp, body := completion(t, "http://"+c.HTTPAddr(), promptTokens(4), true, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "dec-0") {
		t.Fatalf("got %d %q, want the decode pod's stream", resp.StatusCode, body)
	}
	pb := pre.last().body
	if pb["max_tokens"] != float64(1) || pb["stream"] != false {
		t.Fatalf("prefill body %v: want max_tokens 1, stream false", pb)
	}
	if kv, _ := pb["kv_transfer_params"].(map[string]any); kv["do_remote_decode"] != true {
		t.Fatalf("prefill kv_transfer_params %v", pb["kv_transfer_params"])
	}
	kv, _ := dec.last().body["kv_transfer_params"].(map[string]any)
	if kv["remote_engine_id"] != "pre" || kv["do_remote_prefill"] != true {
		t.Fatalf("decode kv_transfer_params %v: want the prefill pod's, with do_remote_prefill", kv)
	}
}

func TestRouteAPIHasNoSideEffects(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c := cellWithPods(t, pods, nil)
	toks := promptTokens(5)
	holdPrefix(t, c, "b", toks, 30)
	body, _ := json.Marshal(map[string]any{"model": "m", "tokenIds": toks})
	for i := 0; i < 3; i++ {
		resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/cell/route", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Pick struct {
				Pod           string `json:"pod"`
				MatchedBlocks int    `json:"matchedBlocks"`
			} `json:"pick"`
			Candidates  []json.RawMessage `json:"candidates"`
			TotalBlocks int               `json:"totalBlocks"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if out.Pick.Pod != "b" || out.Pick.MatchedBlocks != 30 || out.TotalBlocks != 64 || len(out.Candidates) != 2 {
			t.Fatalf("route answer %+v", out)
		}
	}
	if pods[0].count()+pods[1].count() != 0 {
		t.Fatal("a dry-run route sent a request to a pod")
	}
	if n := c.router.tracker.Usage("b").Requests; n != 0 {
		t.Fatalf("a dry-run route left %d requests of load", n)
	}
}

func TestBadProfileStopsTheCell(t *testing.T) {
	cfg := testConfig()
	cfg.Routing.Profiles = []pipeline.ProfileConfig{{Name: "broken", Score: []pipeline.PluginSpec{{Type: "kv-cost", Weight: 1}},
		Pick: pipeline.PluginSpec{Type: "max-score"}}}
	cfg.Routing.Profile = "broken"
	_, err := New(cfg, nil)
	var ve *pipeline.ValidationError
	if !errors.As(err, &ve) || ve.Plugin != "kv-cost" || !strings.Contains(ve.Slot, "block-hashes") {
		t.Fatalf("New = %v, want a validation error naming kv-cost and block-hashes", err)
	}
	cfg.Routing.Profile = "missing"
	cfg.Routing.Profiles = nil
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), `no profile named "missing"`) {
		t.Fatalf("New = %v, want an unknown-profile error", err)
	}
}

func TestBadRequestsGetOpenAIErrors(t *testing.T) {
	c := cellWithPods(t, []*fakePod{newFakePod(t, "a")}, nil)
	for _, tc := range []struct{ body, want string }{
		{`{`, "invalid_request_error"},
		{`{"model":"m"}`, "prompt"},
		{`{"model":"m","prompt":[1,2,3],"max_tokens":"many"}`, "max_tokens"},
	} {
		resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/completions", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || !strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), tc.want) {
			t.Errorf("body %s: got %d %s, want an OpenAI error mentioning %q", tc.body, resp.StatusCode, b, tc.want)
		}
	}
}

// TestTextPromptTokenizedByPod routes a text prompt: the cell has no
// tokenizer.json, so it asks a pod's /tokenize, then routes by the blocks.
func TestTextPromptTokenizedByPod(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c := cellWithPods(t, pods, nil)
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 30)
	toks := make([]uint32, len(text))
	for i := range text {
		toks[i] = uint32(text[i])
	}
	holdPrefix(t, c, "a", toks, 40)
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": text})
	resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "hello from a") {
		t.Fatalf("got %d %s, want pod a (holder of the tokenized prefix)", resp.StatusCode, b)
	}
}

// TestRouteAnswerSaysFailedOpen: the route answer says failed_open when
// every pod was busy and the soft busy filter was ignored, so the global
// tier can prefer a cell whose pick is not busy.
func TestRouteAnswerSaysFailedOpen(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c := cellWithPods(t, pods, nil) // 10,000 blocks a pod; busy above 95%
	body, _ := json.Marshal(map[string]any{"model": "m", "tokenIds": promptTokens(2)})
	route := func() (pod string, failedOpen bool) {
		t.Helper()
		resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/cell/route", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Pick struct {
				Pod string `json:"pod"`
			} `json:"pick"`
			FailedOpen bool `json:"failedOpen"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.Pick.Pod, out.FailedOpen
	}
	c.router.tracker.Start("a", 9900, 0, "")
	if pod, open := route(); pod != "b" || open {
		t.Fatalf("one pod busy: pick %q, failed_open %v; want b, false", pod, open)
	}
	c.router.tracker.Start("b", 9800, 0, "")
	if pod, open := route(); pod != "b" || !open {
		t.Fatalf("both pods busy: pick %q, failed_open %v; want b (the less loaded), true", pod, open)
	}
}
