package enginesim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
)

// TestRepeatedPromptHitsCache sends every prompt shape twice: the second
// time the usage reports cached tokens and the timing model a shorter
// prefill.
func TestRepeatedPromptHitsCache(t *testing.T) {
	p := startPod(t, testConfig())
	cases := []struct {
		name       string
		path       string
		body       map[string]any
		wantCached int // on the second send
	}{
		{"tokens", openai.PathCompletions, map[string]any{"prompt": tokens(1, 100), "max_tokens": 3}, 96},
		{"tokens block-aligned", openai.PathCompletions, map[string]any{"prompt": tokens(2, 64), "max_tokens": 3}, 48},
		{"text", openai.PathCompletions, map[string]any{"model": DefaultModel, "prompt": words("x", 70), "max_tokens": 2}, 64},
		{"chat", openai.PathChatCompletions, map[string]any{"messages": []map[string]string{
			{"role": "system", "content": words("sys", 40)}, {"role": "user", "content": words("u", 30)}}}, 64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first := post(t, p, tc.path, tc.body)
			c1 := decodeCompletion(t, first)
			second := post(t, p, tc.path, tc.body)
			c2 := decodeCompletion(t, second)
			if got := c1.Usage.PromptTokensDetails.CachedTokens; got != 0 {
				t.Errorf("first send: got cached_tokens %d, want 0", got)
			}
			if got := c2.Usage.PromptTokensDetails.CachedTokens; got != tc.wantCached {
				t.Errorf("second send: got cached_tokens %d, want %d (prompt %d tokens)", got, tc.wantCached, c2.Usage.PromptTokens)
			}
			if c1.Usage.PromptTokens != c2.Usage.PromptTokens {
				t.Errorf("got prompt_tokens %d then %d, want equal", c1.Usage.PromptTokens, c2.Usage.PromptTokens)
			}
			ms1, _ := strconv.ParseFloat(first.header.Get(HeaderPrefillMs), 64)
			ms2, _ := strconv.ParseFloat(second.header.Get(HeaderPrefillMs), 64)
			want1 := float64(c1.Usage.PromptTokens) * 0.02
			want2 := float64(c2.Usage.PromptTokens-tc.wantCached) * 0.02
			if !near(ms1, want1) || !near(ms2, want2) || ms2 >= ms1 {
				t.Errorf("got prefill %v ms then %v ms, want %v then %v (lower)", ms1, ms2, want1, want2)
			}
			if got := second.header.Get(HeaderCachedTokens); got != strconv.Itoa(tc.wantCached) {
				t.Errorf("got %s %q, want %d", HeaderCachedTokens, got, tc.wantCached)
			}
			if c2.Choices[0].Text == "" && (c2.Choices[0].Message == nil || c2.Choices[0].Message.Content == "") {
				t.Errorf("answer has no text: %+v", c2.Choices[0])
			}
		})
	}
}

// near reports whether a and b agree to a microsecond.
func near(a, b float64) bool { return a-b < 1e-3 && b-a < 1e-3 }

// TestAnswerShape checks the fields of a non-streamed completion and chat
// answer.
func TestAnswerShape(t *testing.T) {
	p := startPod(t, testConfig())
	c := decodeCompletion(t, post(t, p, openai.PathCompletions, map[string]any{"prompt": "hello world", "max_tokens": 5}))
	if c.Object != "text_completion" || c.Model != DefaultModel || len(c.Choices) != 1 || c.Choices[0].FinishReason == nil || *c.Choices[0].FinishReason != "length" {
		t.Errorf("got completion %+v, want one text_completion choice of model %s finished by length", c, DefaultModel)
	}
	if got := len(strings.Fields(c.Choices[0].Text)); got != 5 {
		t.Errorf("got %d output words, want 5", got)
	}
	if c.Usage.PromptTokens != 3 || c.Usage.CompletionTokens != 5 || c.Usage.TotalTokens != 8 {
		t.Errorf("got usage %+v, want 3 prompt (BOS, hello, world), 5 completion, 8 total", c.Usage)
	}
	ch := decodeCompletion(t, post(t, p, openai.PathChatCompletions, map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}))
	if ch.Object != "chat.completion" || ch.Choices[0].Message == nil || ch.Choices[0].Message.Role != "assistant" || ch.Usage.CompletionTokens != DefaultMaxTokens {
		t.Errorf("got chat %+v, want chat.completion with an assistant message of %d tokens", ch, DefaultMaxTokens)
	}
	if c.ID == ch.ID {
		t.Errorf("got id %q twice, want distinct ids", c.ID)
	}
}

// sseEvent is one decoded "data:" line.
type sseEvent struct {
	done  bool
	chunk map[string]any
}

// readSSE splits a streamed body into its events, failing on any line that
// is not "data: ..." or blank.
func readSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("got line %q, want a data: line", line)
		}
		if data == "[DONE]" {
			out = append(out, sseEvent{done: true})
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("chunk %q does not decode: %v", data, err)
		}
		out = append(out, sseEvent{chunk: m})
	}
	return out
}

// TestStreamChunks checks the chunk sequence of streamed completions and
// chats, with and without usage, and with several tokens per chunk.
func TestStreamChunks(t *testing.T) {
	cases := []struct {
		name       string
		path       string
		perChunk   int
		usage      bool
		wantChunks int // content chunks
	}{
		{"completion", openai.PathCompletions, 1, true, 7},
		{"completion no usage", openai.PathCompletions, 1, false, 7},
		{"completion 3 per chunk", openai.PathCompletions, 3, true, 3}, // 1 + 3 + 3
		{"chat", openai.PathChatCompletions, 1, true, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.TokensPerChunk = tc.perChunk
			p := startPod(t, cfg)
			body := map[string]any{"stream": true, "max_tokens": 7, "stream_options": map[string]bool{"include_usage": tc.usage}}
			wantObj := "text_completion"
			if tc.path == openai.PathChatCompletions {
				body["messages"] = []map[string]string{{"role": "user", "content": words("q", 20)}}
				wantObj = "chat.completion.chunk"
			} else {
				body["prompt"] = tokens(3, 40)
			}
			r := post(t, p, tc.path, body)
			if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("got status %d content type %q, want 200 text/event-stream", r.status, r.header.Get("Content-Type"))
			}
			evs := readSSE(t, r.body)
			if len(evs) == 0 || !evs[len(evs)-1].done {
				t.Fatalf("got %d events, want the last to be [DONE]", len(evs))
			}
			evs = evs[:len(evs)-1]
			if tc.path == openai.PathChatCompletions {
				delta := evs[0].chunk["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
				if delta["role"] != "assistant" {
					t.Errorf("got first chat delta %v, want role assistant", delta)
				}
				evs = evs[1:]
			}
			if tc.usage {
				u := evs[len(evs)-1].chunk
				usage, _ := u["usage"].(map[string]any)
				if len(u["choices"].([]any)) != 0 || usage == nil || usage["completion_tokens"] != float64(7) || usage["prompt_tokens_details"] == nil {
					t.Errorf("got final chunk %v, want no choices and usage with 7 completion tokens and prompt_tokens_details", u)
				}
				evs = evs[:len(evs)-1]
			}
			if len(evs) != tc.wantChunks {
				t.Fatalf("got %d content chunks, want %d", len(evs), tc.wantChunks)
			}
			words := 0
			for i, ev := range evs {
				if ev.chunk["object"] != wantObj {
					t.Errorf("chunk %d: got object %v, want %s", i, ev.chunk["object"], wantObj)
				}
				if _, has := ev.chunk["usage"]; has {
					t.Errorf("chunk %d: got usage in a content chunk", i)
				}
				c := ev.chunk["choices"].([]any)[0].(map[string]any)
				text, _ := c["text"].(string)
				if d, ok := c["delta"].(map[string]any); ok {
					text, _ = d["content"].(string)
				}
				words += len(strings.Fields(text))
				last := i == len(evs)-1
				if fr := c["finish_reason"]; (fr == "length") != last || (!last && fr != nil) {
					t.Errorf("chunk %d: got finish_reason %v, want length only on the last", i, fr)
				}
			}
			if words != 7 {
				t.Errorf("got %d streamed tokens, want 7", words)
			}
		})
	}
}

// TestTokenizeConsistency checks that /tokenize returns the ids the
// completion endpoints use: the ids of a text prompt (or a chat), sent
// back as a token prompt, hit the blocks the text request stored; with
// the word hasher and with a Hugging Face tokenizer.
func TestTokenizeConsistency(t *testing.T) {
	hf, err := LoadHFTokenizer(fixtureTokenizer, "qwen2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []struct {
		name string
		tok  TextTokenizer
	}{{"words", nil}, {"hf", hf}} {
		t.Run(tok.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Tokenizer = tok.tok
			testTokenizeConsistency(t, startPod(t, cfg))
		})
	}
}

func testTokenizeConsistency(t *testing.T, p *Pod) {
	msgs := []map[string]string{{"role": "system", "content": words("s", 50)}, {"role": "user", "content": words("v", 20)}}
	cases := []struct {
		name     string
		path     string
		request  map[string]any
		tokenize map[string]any
	}{
		{"prompt", openai.PathCompletions, map[string]any{"prompt": words("w", 80)}, map[string]any{"model": DefaultModel, "prompt": words("w", 80), "add_special_tokens": true}},
		{"prompt no special", openai.PathCompletions, map[string]any{"prompt": words("z", 80), "add_special_tokens": false}, map[string]any{"prompt": words("z", 80), "add_special_tokens": false}},
		{"messages", openai.PathChatCompletions, map[string]any{"messages": msgs}, map[string]any{"model": DefaultModel, "messages": msgs}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first := decodeCompletion(t, post(t, p, tc.path, tc.request))
			r := post(t, p, PathTokenize, tc.tokenize)
			if r.status != http.StatusOK {
				t.Fatalf("tokenize: got status %d (%s), want 200", r.status, r.body)
			}
			var tr struct {
				Tokens      []uint32 `json:"tokens"`
				Count       int      `json:"count"`
				MaxModelLen int      `json:"max_model_len"`
			}
			if err := json.Unmarshal(r.body, &tr); err != nil {
				t.Fatal(err)
			}
			if tr.Count != len(tr.Tokens) || tr.Count != first.Usage.PromptTokens || tr.MaxModelLen != DefaultMaxModelLen {
				t.Fatalf("got count %d, %d tokens, max_model_len %d; want %d (the completion's prompt_tokens) and %d",
					tr.Count, len(tr.Tokens), tr.MaxModelLen, first.Usage.PromptTokens, DefaultMaxModelLen)
			}
			again := decodeCompletion(t, post(t, p, openai.PathCompletions, map[string]any{"prompt": tr.Tokens}))
			want := (tr.Count - 1) / 16 * 16
			if got := again.Usage.PromptTokensDetails.CachedTokens; got != want {
				t.Errorf("token prompt from /tokenize: got cached_tokens %d, want %d", got, want)
			}
		})
	}
}

// TestRejects checks that malformed requests get OpenAI error bodies with
// the right status.
func TestRejects(t *testing.T) {
	cfg := testConfig()
	cfg.MaxModelLen = 100
	cfg.Role = RolePrefill
	p := startPod(t, cfg)
	cases := []struct {
		name   string
		path   string
		body   string
		status int
	}{
		{"not json", openai.PathCompletions, `{`, 400},
		{"no prompt", openai.PathCompletions, `{"max_tokens":3}`, 400},
		{"other model", openai.PathCompletions, `{"model":"nope","prompt":"a"}`, 404},
		{"batch", openai.PathCompletions, `{"prompt":["a","b"]}`, 400},
		{"empty tokens", openai.PathCompletions, `{"prompt":"","add_special_tokens":false}`, 400},
		{"out of vocab", openai.PathCompletions, `{"prompt":[5, 4000000]}`, 400},
		{"zero max tokens", openai.PathCompletions, `{"prompt":"a","max_tokens":0}`, 400},
		{"too long", openai.PathCompletions, `{"prompt":"a b c","max_tokens":98}`, 400},
		{"bad add_special_tokens", openai.PathCompletions, `{"prompt":"a","add_special_tokens":"yes"}`, 400},
		{"bad kv params", openai.PathCompletions, `{"prompt":"a","kv_transfer_params":{"do_remote_decode":"yes"}}`, 400},
		{"both legs", openai.PathCompletions, `{"prompt":"a","kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":true}}`, 400},
		{"decode leg on prefill pod", openai.PathCompletions, `{"prompt":"a","kv_transfer_params":{"do_remote_prefill":true}}`, 400},
		{"chat without messages", openai.PathChatCompletions, `{"prompt":"a"}`, 400},
		{"tokenize nothing", PathTokenize, `{}`, 400},
		{"tokenize both", PathTokenize, `{"prompt":"a","messages":[{"role":"user","content":"b"}]}`, 400},
		{"tokenize bad messages", PathTokenize, `{"messages":[{"content":1}]}`, 400},
		{"tokenize other model", PathTokenize, `{"model":"x","prompt":"a"}`, 404},
		{"unknown path", "/v2/whatever", `{}`, 404},
		{"wrong method", PathHealth, ``, 405},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, p, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("got status %d (%s), want %d", r.status, r.body, tc.status)
			}
			var eb openai.ErrorBody
			if err := json.Unmarshal(r.body, &eb); err != nil || eb.Error.Message == "" || eb.Error.Type == "" {
				t.Errorf("got body %s, want an OpenAI error body", r.body)
			}
		})
	}
	if got := p.Stats().Rejected; got < 10 {
		t.Errorf("got %d rejected requests counted, want at least 10", got)
	}
}

// TestModelsHealthMetrics checks the GET endpoints and vLLM's metric names.
func TestModelsHealthMetrics(t *testing.T) {
	cfg := testConfig()
	cfg.Blocks = 64
	p := startPod(t, cfg)
	if r := get(t, p, PathHealth); r.status != http.StatusOK {
		t.Errorf("health: got status %d, want 200", r.status)
	}
	var ml openai.ModelList
	if r := get(t, p, openai.PathModels); r.status != http.StatusOK || json.Unmarshal(r.body, &ml) != nil || len(ml.Data) != 1 || ml.Data[0].ID != DefaultModel || ml.Data[0].MaxModelLen != DefaultMaxModelLen {
		t.Errorf("models: got %d %s, want one model %s", r.status, r.body, DefaultModel)
	}
	decodeCompletion(t, post(t, p, openai.PathCompletions, map[string]any{"prompt": tokens(9, 64), "max_tokens": 2}))
	decodeCompletion(t, post(t, p, openai.PathCompletions, map[string]any{"prompt": tokens(9, 64), "max_tokens": 2}))
	r := get(t, p, PathMetrics)
	text := string(r.body)
	for _, want := range []string{
		`vllm:num_requests_running{model_name="enginesim",engine="0"} 0`,
		`vllm:num_requests_waiting{model_name="enginesim",engine="0"} 0`,
		"vllm:kv_cache_usage_perc{model_name=\"enginesim\",engine=\"0\"} 0\n", // idle: cached blocks are free to vLLM
		`enginesim:kv_cache_blocks{model_name="enginesim",engine="0"} 4`,
		`vllm:cache_config_info{block_size="16",num_gpu_blocks="64",`,
		`vllm:prefix_cache_queries_total{model_name="enginesim",engine="0"} 128`,
		`vllm:prefix_cache_hits_total{model_name="enginesim",engine="0"} 48`,
		`vllm:generation_tokens_total{model_name="enginesim",engine="0"} 4`,
		`vllm:request_success_total{finished_reason="length",model_name="enginesim",engine="0"} 2`,
		"# TYPE vllm:prefix_cache_hits_total counter",
		"# TYPE vllm:num_requests_running gauge",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics: got\n%s\nwant a line containing %q", text, want)
		}
	}
	s := p.Stats()
	if s.Requests != 2 || s.PromptTokens != 128 || s.CachedTokens != 48 || s.CacheBlocks != 4 {
		t.Errorf("got stats %+v, want 2 requests, 128 prompt tokens, 48 cached, 4 blocks", s)
	}
}
