package global

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell"
)

// fixtureTokenizer is cachekey/tokenizer's small Qwen2-style fixture
// (byte-level BPE, ChatML special tokens).
const fixtureTokenizer = "../cachekey/tokenizer/testdata/qwen2.tokenizer.json"

// refTokenizer loads the fixture with a chat template, as a cell would.
func refTokenizer(t *testing.T, template string) *tokenizer.BPE {
	t.Helper()
	tmpl, err := tokenizer.ChatTemplateByName(template)
	if err != nil {
		t.Fatal(err)
	}
	bpe, err := tokenizer.LoadFile(fixtureTokenizer, tokenizer.Options{ChatTemplate: tmpl})
	if err != nil {
		t.Fatal(err)
	}
	return bpe
}

func TestTokenizeConfigValidate(t *testing.T) {
	ok := func(c *TokenizeConfig) {}
	for _, tc := range []struct {
		name string
		mod  func(*TokenizeConfig)
		want string // "" means valid
	}{
		{"default", ok, ""},
		{"model", func(c *TokenizeConfig) { c.Models = []ModelTokenizer{{Model: "m", File: "f", ChatTemplate: "chatml"}} }, ""},
		{"no model name", func(c *TokenizeConfig) { c.Models = []ModelTokenizer{{File: "f"}} }, "tokenize.models[0].model"},
		{"twice", func(c *TokenizeConfig) { c.Models = []ModelTokenizer{{Model: "m", File: "f"}, {Model: "m", File: "g"}} }, "listed twice"},
		{"no file", func(c *TokenizeConfig) { c.Models = []ModelTokenizer{{Model: "m"}} }, "tokenizer_json"},
		{"bad template", func(c *TokenizeConfig) { c.Models = []ModelTokenizer{{Model: "m", File: "f", ChatTemplate: "jinja"}} }, "chat_template"},
		{"no timeout", func(c *TokenizeConfig) { c.RemoteTimeout = 0 }, "remote_timeout"},
		{"no timeout, no remote", func(c *TokenizeConfig) { c.RemoteTimeout, c.Remote = 0, false }, ""},
		{"negative cache", func(c *TokenizeConfig) { c.CacheBytes = -1 }, "cache_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultTokenizeConfig()
			tc.mod(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidConfig)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseModelTokenizer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ModelTokenizer
		bad  bool
	}{
		{"m=/t/tokenizer.json", ModelTokenizer{Model: "m", File: "/t/tokenizer.json"}, false},
		{"Qwen/Qwen2.5-7B=/t/tok.json,qwen2.5", ModelTokenizer{Model: "Qwen/Qwen2.5-7B", File: "/t/tok.json", ChatTemplate: "qwen2.5"}, false},
		{"m", ModelTokenizer{}, true},
		{"=f", ModelTokenizer{}, true},
		{"m=", ModelTokenizer{}, true},
	} {
		got, err := ParseModelTokenizer(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseModelTokenizer(%q) = %+v, %v; want %+v (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// TestTokenizerLocal checks the in-process path: the ids are the cell
// tokenizer's for the same file and template.
func TestTokenizerLocal(t *testing.T) {
	cfg := DefaultTokenizeConfig()
	cfg.Remote = false
	cfg.Models = []ModelTokenizer{{Model: "m", File: fixtureTokenizer, ChatTemplate: "qwen2"}, {Model: "prompts-only", File: fixtureTokenizer}}
	tk, err := NewTokenizer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref := refTokenizer(t, "qwen2")
	msgs := []tokenizer.Message{{Role: "user", Content: strings.Repeat("Which pod holds the prefix? ", 10)}}
	wantChat, _ := ref.EncodeChat(context.Background(), msgs, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  Request
		want []uint32
		err  error
	}{
		{"text", Request{Model: "m", Prompt: "The router reads the prompt."}, ref.EncodeString("The router reads the prompt.", true, nil), nil},
		{"chat", Request{Model: "m", Chat: true, Messages: msgs}, wantChat, nil},
		{"chat twice (segments cached)", Request{Model: "m", Chat: true, Messages: msgs}, wantChat, nil},
		{"text of a model without template", Request{Model: "prompts-only", Prompt: "hi"}, ref.EncodeString("hi", true, nil), nil},
		{"chat of a model without template", Request{Model: "prompts-only", Chat: true, Messages: msgs}, nil, ErrNoTokenizer},
		{"unknown model", Request{Model: "other", Prompt: "hi"}, nil, ErrNoTokenizer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, info, err := tk.Tokenize(ctx, &tc.req, nil, nil)
			if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v, %v", got, err, tc.want, tc.err)
			}
			if err == nil && info.Source != SourceLocal {
				t.Fatalf("source %q, want %q", info.Source, SourceLocal)
			}
		})
	}
	if st := tk.CacheStats(); st.Hits == 0 {
		t.Fatalf("cache stats %+v: the second chat hit no segment", st)
	}
}

// fakeTokenizeCell serves a cell's POST /tokenize with the fixture, and
// counts its calls; fail makes it answer 500.
type fakeTokenizeCell struct {
	view        CellView
	calls       atomic.Int64
	fail        atomic.Bool
	traceparent atomic.Value // string: the last call's header
}

func startFakeTokenizeCell(t testing.TB, id string, bpe *tokenizer.BPE) *fakeTokenizeCell {
	t.Helper()
	f := &fakeTokenizeCell{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		f.traceparent.Store(r.Header.Get("traceparent"))
		if r.URL.Path != "/tokenize" || f.fail.Load() {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		var body struct {
			Prompt   *string             `json:"prompt"`
			Messages []tokenizer.Message `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		var ids []uint32
		if body.Prompt != nil {
			ids = bpe.EncodeString(*body.Prompt, true, nil)
		} else {
			ids, _ = bpe.EncodeChat(r.Context(), body.Messages, nil)
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": ids, "count": len(ids)})
	}))
	t.Cleanup(srv.Close)
	f.view = CellView{ID: id, HTTPAddr: strings.TrimPrefix(srv.URL, "http://"), GRPCAddr: "127.0.0.1:1", Alive: true}
	return f
}

// TestTokenizerRemote checks the remote path: a cell's answer, then the
// cache; a failing cell is skipped for the next one within the call and
// counts as far away afterwards; local template refusals go remote.
func TestTokenizerRemote(t *testing.T) {
	// The cells render chats with plain ChatML, which takes tool messages.
	ref := refTokenizer(t, "chatml")
	a, b := startFakeTokenizeCell(t, "a", ref), startFakeTokenizeCell(t, "b", ref)
	cells := []CellView{a.view, b.view}
	cfg := DefaultTokenizeConfig()
	cfg.RemoteTimeout = 10 * time.Second // a loaded test machine
	cfg.Models = []ModelTokenizer{{Model: "local", File: fixtureTokenizer, ChatTemplate: "qwen2.5"}}
	tk, err := NewTokenizer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	text := &Request{Model: "m", Prompt: "The router reads the prompt."}
	want := ref.EncodeString(text.Prompt, true, nil)

	got, info, err := tk.Tokenize(ctx, text, cells, nil)
	if err != nil || !slices.Equal(got, want) || info.Source != SourceRemote || info.Took <= 0 {
		t.Fatalf("first call: %v %+v %v, want %v from remote, timed", got, info, err, want)
	}
	first := info.Cell
	calls := a.calls.Load() + b.calls.Load()
	got, info, err = tk.Tokenize(ctx, text, cells, []uint32{7})
	if err != nil || !slices.Equal(got, append([]uint32{7}, want...)) || info.Source != SourceCache || a.calls.Load()+b.calls.Load() != calls {
		t.Fatalf("second call: %v %+v %v, want the cached ids and no call", got, info, err)
	}

	// A new prompt goes to the cell not measured yet; then both are, and
	// the nearer one fails: the call moves on to the other one, and the
	// next request asks the other one first.
	if _, info, err = tk.Tokenize(ctx, &Request{Model: "m", Prompt: "a second prompt"}, cells, nil); err != nil || info.Cell == first {
		t.Fatalf("second prompt: %+v %v, want the cell not measured yet", info, err)
	}
	var order [2]int
	tk.near.order(cells, order[:])
	failing, other := a, b
	if order[0] == 1 {
		failing, other = b, a
	}
	failing.fail.Store(true)
	got, info, err = tk.Tokenize(ctx, &Request{Model: "m", Prompt: "another prompt"}, cells, nil)
	if err != nil || info.Cell != other.view.ID || !slices.Equal(got, ref.EncodeString("another prompt", true, nil)) {
		t.Fatalf("with %s failing: %v %+v %v, want %s's answer", failing.view.ID, got, info, err, other.view.ID)
	}
	before := failing.calls.Load()
	if _, info, err = tk.Tokenize(ctx, &Request{Model: "m", Prompt: "a third prompt"}, cells, nil); err != nil || failing.calls.Load() != before {
		t.Fatalf("the failed cell was asked again first (%+v, %v)", info, err)
	}

	// Both fail: an error wrapping ErrTokenize, nothing cached.
	other.fail.Store(true)
	if _, info, err = tk.Tokenize(ctx, &Request{Model: "m", Prompt: "a fourth prompt"}, cells, nil); !errors.Is(err, ErrTokenize) || info.RemoteErr == nil {
		t.Fatalf("both failing: %+v %v, want ErrTokenize", info, err)
	}
	failing.fail.Store(false)
	other.fail.Store(false)

	// The call carries the request's trace context.
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	tctx := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	if _, info, err = tk.Tokenize(tctx, &Request{Model: "m", Prompt: "a traced prompt"}, cells, nil); err != nil {
		t.Fatal(err)
	}
	asked := a
	if info.Cell == "b" {
		asked = b
	}
	if tp, _ := asked.traceparent.Load().(string); !strings.Contains(tp, tid.String()) {
		t.Fatalf("traceparent %q, want trace %s", tp, tid)
	}

	// The built-in template refuses a tool message: the cell renders it.
	tool := &Request{Model: "local", Chat: true, Messages: []tokenizer.Message{{Role: "user", Content: "6*7?"}, {Role: "tool", Content: "42"}}}
	_, info, err = tk.Tokenize(ctx, tool, cells, nil)
	if !errors.Is(info.LocalErr, tokenizer.ErrUnsupportedMessage) || info.Source != SourceRemote {
		t.Fatalf("tool message: %+v %v, want a local refusal, then the remote answer", info, err)
	}
}

// TestNearestOrder checks the choice of cells for remote calls: unmeasured
// cells first, then by round trip, ties to the less loaded, unusable cells
// never.
func TestNearestOrder(t *testing.T) {
	n := newNearest()
	cells := []CellView{
		{ID: "far", HTTPAddr: "x", Alive: true}, {ID: "near", HTTPAddr: "x", Alive: true},
		{ID: "new-busy", HTTPAddr: "x", Alive: true, Load: CellLoad{ActiveBlocks: 9}}, {ID: "new", HTTPAddr: "x", Alive: true},
		{ID: "dead", HTTPAddr: "x"}, {ID: "mid", HTTPAddr: "x", Alive: true},
	}
	n.observe("far", 40*time.Millisecond)
	n.observe("near", time.Millisecond)
	n.observe("mid", 5*time.Millisecond)
	n.observe("dead", 0)
	for _, tc := range []struct {
		room int
		want []string
	}{{2, []string{"new", "new-busy"}}, {4, []string{"new", "new-busy", "near", "mid"}}, {8, []string{"new", "new-busy", "near", "mid", "far"}}} {
		out := make([]int, tc.room)
		k := n.order(cells, out)
		var got []string
		for _, i := range out[:k] {
			got = append(got, cells[i].ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("order with room %d = %v, want %v", tc.room, got, tc.want)
		}
	}
	// Smoothing: one slow answer moves the average a quarter of the way.
	n.observe("near", 41*time.Millisecond)
	if got := n.rtt["near"]; got != 11*time.Millisecond {
		t.Fatalf("smoothed rtt %v, want 11ms", got)
	}
}

// tokenizingCell starts a test cell that tokenizes with the fixture.
func tokenizingCell(t *testing.T, id string, hits *sync.Map) *testCell {
	return startTestCellWith(t, id, hits, func(c *cell.Config) {
		c.Routing.TokenizerJSON, c.Routing.ChatTemplate = fixtureTokenizer, "chatml"
	})
}

// TestTextAndChatRoutedBySummary checks, with the global tier tokenizing
// in process and through the cells' /tokenize, that a text prompt's dry
// run is no longer cold when a cell holds it, and that a chat goes to the
// cell holding its blocks by summary (metric path summary_chat).
func TestTextAndChatRoutedBySummary(t *testing.T) {
	for _, mode := range []string{"local", "remote"} {
		t.Run(mode, func(t *testing.T) {
			hits := &sync.Map{}
			a, b := tokenizingCell(t, "cell-a", hits), tokenizingCell(t, "cell-b", hits)
			ref := refTokenizer(t, "chatml")
			text := strings.Repeat("The global tier hashes the prompt as the cells do. ", 12)
			msgs := []tokenizer.Message{{Role: "system", Content: "Answer briefly."}, {Role: "user", Content: text}}
			textToks := ref.EncodeString(text, true, nil)
			chatToks, _ := ref.EncodeChat(context.Background(), msgs, nil)
			b.hold(t, "cell-b-pod1", textToks, len(textToks)/16)
			b.hold(t, "cell-b-pod0", chatToks, len(chatToks)/16)
			g := startGlobalWith(t, StaticDirectory{a.view(t), b.view(t)}, func(c *Config) {
				// The choice here is by prefix alone: on a loaded machine a
				// first probe's round trip (its dial included) can exceed
				// the 12 blocks the prompt has.
				c.Choose.RTTWeight = 0
				if mode == "local" {
					c.Tokenize.Models = []ModelTokenizer{{Model: "m", File: fixtureTokenizer, ChatTemplate: "chatml"}}
				}
			})
			url := "http://" + g.HTTPAddr()

			resp, body := post(t, url+"/v1/global/route", map[string]any{"model": "m", "prompt": text})
			var rr struct {
				Cell     string `json:"cell"`
				ColdPath bool   `json:"coldPath"`
				Probes   int    `json:"probes"`
				Blocks   int    `json:"totalBlocks"`
			}
			json.Unmarshal([]byte(body), &rr)
			if resp.StatusCode != 200 || rr.ColdPath || rr.Probes == 0 || rr.Cell != "cell-b" || rr.Blocks != len(textToks)/16 {
				t.Fatalf("dry run of the text prompt: %d %s; want cell-b by summary, %d blocks", resp.StatusCode, body, len(textToks)/16)
			}

			resp, body = post(t, url+"/v1/chat/completions", map[string]any{"model": "m", "messages": msgs, "max_tokens": 2})
			if resp.StatusCode != 200 || resp.Header.Get(CellHeader) != "cell-b" || !strings.Contains(body, "from cell-b-pod0") {
				t.Fatalf("chat: %d %s from %q, want cell-b-pod0", resp.StatusCode, body, resp.Header.Get(CellHeader))
			}
			resp, body = post(t, url+"/v1/completions", map[string]any{"model": "m", "prompt": text, "max_tokens": 2})
			if resp.StatusCode != 200 || !strings.Contains(body, "from cell-b-pod1") {
				t.Fatalf("text: %d %s, want cell-b-pod1", resp.StatusCode, body)
			}
			_, metrics := get(t, url+"/metrics")
			// In process, both requests are tokenized locally; through the
			// cells, the chat is a remote call and the text prompt the
			// cached answer of the dry run's call.
			counts := map[string][]string{"local": {"local 2", "remote 0", "cache 0"}, "remote": {"local 0", "remote 1", "cache 1"}}[mode]
			want := []string{
				`cellrouter_global_requests_total{outcome="ok",path="summary_chat"} 1`,
				`cellrouter_global_requests_total{outcome="ok",path="summary_text"} 1`,
				`cellrouter_global_tokenize_errors_total{source="remote"} 0`,
				`cellrouter_global_tokenize_cache_total{result="hit"}`,
			}
			for _, c := range counts {
				source, n, _ := strings.Cut(c, " ")
				want = append(want, fmt.Sprintf(`cellrouter_global_tokenize_seconds_count{source=%q} %s`, source, n))
			}
			if strings.Contains(metrics, `cellrouter_global_tokenize_seconds_sum{source="`+mode+`"} 0`+"\n") {
				t.Errorf("tokenize time sums to 0")
			}
			for _, want := range want {
				if !strings.Contains(metrics, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
		})
	}
}

// TestUntokenizedGoesCold checks that a chat the global tier cannot
// tokenize (remote off and no file; or the remote call failing, here by
// timing out at once) takes the cold path, counted as such.
func TestUntokenizedGoesCold(t *testing.T) {
	hits := &sync.Map{}
	a := tokenizingCell(t, "cell-a", hits)
	for _, mode := range []string{"no tokenizer", "remote fails"} {
		t.Run(mode, func(t *testing.T) {
			g := startGlobalWith(t, StaticDirectory{a.view(t)}, func(c *Config) {
				c.Tokenize.Remote, c.Tokenize.RemoteTimeout = mode == "remote fails", time.Nanosecond
			})
			url := "http://" + g.HTTPAddr()
			resp, body := post(t, url+"/v1/chat/completions", map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
			if resp.StatusCode != 200 {
				t.Fatalf("chat: %d %s", resp.StatusCode, body)
			}
			_, metrics := get(t, url+"/metrics")
			want := []string{`cellrouter_global_requests_total{outcome="ok",path="untokenized_chat"} 1`}
			if mode == "remote fails" {
				want = append(want, `cellrouter_global_tokenize_errors_total{source="remote"} 1`)
			}
			for _, w := range want {
				if !strings.Contains(metrics, w) {
					t.Errorf("metrics lack %q", w)
				}
			}
		})
	}
}

// TestChatDryRun checks that the dry-run route API takes a chat (and a
// cache salt) and routes it by summary as /v1/chat/completions would.
func TestChatDryRun(t *testing.T) {
	hits := &sync.Map{}
	a, b := tokenizingCell(t, "cell-a", hits), tokenizingCell(t, "cell-b", hits)
	ref := refTokenizer(t, "chatml")
	msgs := []tokenizer.Message{{Role: "system", Content: "Answer briefly."},
		{Role: "user", Content: strings.Repeat("Which cell holds this conversation? ", 12)}}
	chatToks, _ := ref.EncodeChat(context.Background(), msgs, nil)
	b.hold(t, "cell-b-pod0", chatToks, len(chatToks)/16)
	g := startGlobalWith(t, StaticDirectory{a.view(t), b.view(t)}, func(c *Config) {
		c.Tokenize.Models = []ModelTokenizer{{Model: "m", File: fixtureTokenizer, ChatTemplate: "chatml"}}
	})
	url := "http://" + g.HTTPAddr() + "/v1/global/route"
	var rr struct {
		Cell     string `json:"cell"`
		ColdPath bool   `json:"coldPath"`
		Blocks   int    `json:"totalBlocks"`
	}
	resp, body := post(t, url, map[string]any{"model": "m", "messages": msgs})
	json.Unmarshal([]byte(body), &rr)
	if resp.StatusCode != 200 || rr.ColdPath || rr.Cell != "cell-b" || rr.Blocks != len(chatToks)/16 {
		t.Fatalf("dry run of the chat: %d %s; want cell-b by summary, %d blocks", resp.StatusCode, body, len(chatToks)/16)
	}
	// Salted, the same chat is another identity that no cell holds.
	resp, body = post(t, url, map[string]any{"model": "m", "messages": msgs, "cacheSalt": "tenant-x"})
	rr.ColdPath = false
	json.Unmarshal([]byte(body), &rr)
	if resp.StatusCode != 200 || !rr.ColdPath {
		t.Fatalf("dry run of the salted chat: %d %s; want the cold path", resp.StatusCode, body)
	}
}
