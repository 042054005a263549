package cell

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
)

// fixtureTokenizer is the tokenizer package's small Qwen2-style fixture
// (byte-level BPE with the ChatML special tokens).
const fixtureTokenizer = "../cachekey/tokenizer/testdata/qwen2.tokenizer.json"

// postTokenize posts body to the cell's /tokenize and decodes the answer.
func postTokenize(t *testing.T, c *Cell, body string) (int, []uint32, string) {
	t.Helper()
	resp, err := http.Post("http://"+c.HTTPAddr()+TokenizePath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Count  int      `json:"count"`
		Tokens []uint32 `json:"tokens"`
	}
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, &out); err != nil || out.Count != len(out.Tokens) {
			t.Fatalf("answer %s: %v (count %d, %d tokens)", b, err, out.Count, len(out.Tokens))
		}
	}
	return resp.StatusCode, out.Tokens, string(b)
}

// TestTokenizeEndpointLocal checks that /tokenize answers with the cell's
// in-process tokenizer exactly what it hashes for a completion prompt and
// for chat messages.
func TestTokenizeEndpointLocal(t *testing.T) {
	c := cellWithPods(t, []*fakePod{newFakePod(t, "a")}, func(cfg *Config) {
		cfg.Routing.TokenizerJSON, cfg.Routing.ChatTemplate = fixtureTokenizer, "chatml"
	})
	tmpl, _ := tokenizer.ChatTemplateByName("chatml")
	bpe, err := tokenizer.LoadFile(fixtureTokenizer, tokenizer.Options{ChatTemplate: tmpl})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []tokenizer.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Where does the router send it?"}}
	wantChat, _ := bpe.EncodeChat(context.Background(), msgs, nil)
	for _, tc := range []struct {
		name, body string
		want       []uint32
	}{
		{"prompt", `{"model":"m","prompt":"The router reads the prompt."}`, bpe.EncodeString("The router reads the prompt.", true, nil)},
		{"prompt with defaults spelled out", `{"prompt":"The router reads the prompt.","add_special_tokens":true}`, bpe.EncodeString("The router reads the prompt.", true, nil)},
		{"messages", `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Where does the router send it?"}]}`, wantChat},
		{"messages with text parts", `{"messages":[{"role":"system","content":[{"type":"text","text":"Be brief."}]},{"role":"user","content":"Where does the router send it?"}],"add_generation_prompt":true}`, wantChat},
		{"empty prompt", `{"prompt":""}`, bpe.EncodeString("", true, []uint32{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got, body := postTokenize(t, c, tc.body)
			if code != 200 || !slices.Equal(got, tc.want) {
				t.Fatalf("got %d %v (%s), want 200 %v", code, got, body, tc.want)
			}
		})
	}
}

// TestTokenizeEndpointThroughPod checks that a cell without a tokenizer
// file answers /tokenize through a pod's.
func TestTokenizeEndpointThroughPod(t *testing.T) {
	c := cellWithPods(t, []*fakePod{newFakePod(t, "a")}, nil)
	code, got, body := postTokenize(t, c, `{"model":"m","prompt":"hi!"}`)
	if want := []uint32{'h', 'i', '!'}; code != 200 || !slices.Equal(got, want) {
		t.Fatalf("got %d %v (%s), want 200 %v (the fake pod's ids)", code, got, body, want)
	}
}

// TestTokenizeEndpointErrors checks the refusals: OpenAI error bodies that
// name the parameter, and no pod address in a failure.
func TestTokenizeEndpointErrors(t *testing.T) {
	c := cellWithPods(t, []*fakePod{newFakePod(t, "a")}, func(cfg *Config) {
		cfg.Routing.TokenizerJSON, cfg.Routing.ChatTemplate = fixtureTokenizer, "qwen2.5"
	})
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"not JSON", `{`, 400, "invalid_request_error"},
		{"neither", `{"model":"m"}`, 400, `"param":"prompt"`},
		{"both", `{"prompt":"a","messages":[{"role":"user","content":"b"}]}`, 400, "not both"},
		{"prompt without special tokens", `{"prompt":"a","add_special_tokens":false}`, 400, `"param":"add_special_tokens"`},
		{"messages without generation prompt", `{"messages":[{"role":"user","content":"b"}],"add_generation_prompt":false}`, 400, `"param":"add_generation_prompt"`},
		{"message without role", `{"messages":[{"content":"b"}]}`, 400, "role"},
		{"message the template refuses", `{"messages":[{"role":"tool","content":"42"}]}`, 400, "not supported by built-in chat template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := postTokenize(t, c, tc.body)
			if code != tc.code || !strings.Contains(body, `"error"`) || !strings.Contains(body, tc.want) {
				t.Fatalf("got %d %s, want %d and an OpenAI error with %q", code, body, tc.code, tc.want)
			}
		})
	}
}

// TestTokenizeEndpointHidesPods checks that a failing pod's address does
// not reach the client.
func TestTokenizeEndpointHidesPods(t *testing.T) {
	dead := deadAddr(t)
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "gone", Address: dead}}
	c := startCell(t, cfg)
	code, _, body := postTokenize(t, c, `{"prompt":"a"}`)
	if code < 500 || strings.Contains(body, dead) || !strings.Contains(body, "server_error") {
		t.Fatalf("got %d %s, want a 5xx server_error without %s", code, body, dead)
	}
}

// TestChatTokenizedAlikeOnEveryPath checks that the ids /tokenize answers
// for a chat are the ids the data plane routes the same chat by: a pod
// holding their blocks takes the chat request.
func TestChatTokenizedAlikeOnEveryPath(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c := cellWithPods(t, pods, func(cfg *Config) {
		cfg.Routing.TokenizerJSON, cfg.Routing.ChatTemplate = fixtureTokenizer, "qwen2"
	})
	msgs := `[{"role":"user","content":"` + strings.Repeat("The cell keeps an exact index of which pod holds which block. ", 12) + `"}]`
	code, toks, body := postTokenize(t, c, `{"model":"m","messages":`+msgs+`}`)
	if code != 200 || len(toks) < 10*16 {
		t.Fatalf("tokenize: %d %s, want 200 and at least 160 tokens", code, body)
	}
	holdPrefix(t, c, "b", toks, len(toks)/16)
	resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":`+msgs+`,"max_tokens":4}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(PodHeader) != "b" {
		t.Fatalf("chat went to %q (%d %s), want pod b, which holds the /tokenize ids' blocks", resp.Header.Get(PodHeader), resp.StatusCode, b)
	}
}

// FuzzParseTokenize checks that any body either decodes into a request
// with exactly one of prompt or messages, or is refused with an OpenAI
// request error; it never panics.
func FuzzParseTokenize(f *testing.F) {
	for _, s := range []string{`{"prompt":"a"}`, `{"messages":[{"role":"user","content":"x"}]}`, `{"messages":null,"prompt":"p"}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}]}`, `[]`, `{"prompt":1}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseTokenize(body)
		if err != nil {
			if req != nil {
				t.Fatalf("parseTokenize(%q) returned a request and an error", body)
			}
			return
		}
		if req.Chat == (len(req.Messages) == 0) {
			t.Fatalf("parseTokenize(%q): chat %v with %d messages", body, req.Chat, len(req.Messages))
		}
		if req.Chat && req.Prompt != "" {
			t.Fatalf("parseTokenize(%q): chat with a prompt", body)
		}
	})
}
