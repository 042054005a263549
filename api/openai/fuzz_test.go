package openai

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// completionSeeds are real-looking /v1/completions bodies.
var completionSeeds = []string{
	`{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"San Francisco is a","max_tokens":7,"temperature":0}`,
	`{"model":"m","prompt":["a","b"],"n":2,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"m","prompt":[128000,791,6864,315,9822,374],"max_tokens":16,"cache_salt":"tenant-a"}`,
	`{"model":"m","prompt":[[1,2,3],[4,5,6]],"echo":true,"logprobs":1}`,
	`{"model":"sql-lora","prompt":"select","kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null},"user":"u-1"}`,
	`{"prompt":[1,2.0]}`,
	`{"prompt":[[1],[]]}`,
	`{"prompt":null,"max_tokens":-3}`,
	` {"prompt" : [ 0 , 4294967295 ] } `,
	`{"prompt":"\u00e9\ud83d\ude00","max_tokens":1e3}`,
}

// chatSeeds are real-looking /v1/chat/completions bodies.
var chatSeeds = []string{
	`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"max_completion_tokens":32}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is in this image?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}],"stream":true}`,
	`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"ok"}],"tools":[]}`,
	`{"messages":[]}`,
	`{"messages":[{"content":"x"}]}`,
	`{"messages":[{"role":"user","content":[{"text":"x"}]}]}`,
	`{"messages":"hi"}`,
}

// checkParsed checks the invariants of a successful parse against
// encoding/json as the reference decoder.
func checkParsed(t *testing.T, kind Kind, body []byte, req *Request) {
	t.Helper()
	if !json.Valid(body) {
		t.Fatalf("parse accepted invalid JSON %q", body)
	}
	var ref struct {
		Model    string          `json:"model"`
		Prompt   json.RawMessage `json:"prompt"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &ref); err != nil {
		t.Fatalf("reference decode of accepted body %q: %v", body, err)
	}
	if req.Model != ref.Model {
		t.Errorf("model: got %q, want %q", req.Model, ref.Model)
	}
	switch kind {
	case KindCompletion:
		var want Prompt
		switch req.Prompt.Form {
		case PromptText:
			want = Prompt{Form: PromptText, Count: 1}
			if err := json.Unmarshal(ref.Prompt, &want.Text); err != nil {
				t.Fatalf("reference prompt: %v", err)
			}
		case PromptTexts:
			var ss []string
			if err := json.Unmarshal(ref.Prompt, &ss); err != nil {
				t.Fatalf("reference prompt: %v", err)
			}
			want = Prompt{Form: PromptTexts, Text: ss[0], Count: len(ss)}
		case PromptTokens:
			want = Prompt{Form: PromptTokens, Count: 1}
			if err := json.Unmarshal(ref.Prompt, &want.Tokens); err != nil {
				t.Fatalf("reference prompt: %v", err)
			}
		case PromptTokenBatch:
			var tss [][]uint32
			if err := json.Unmarshal(ref.Prompt, &tss); err != nil {
				t.Fatalf("reference prompt: %v", err)
			}
			want = Prompt{Form: PromptTokenBatch, Tokens: tss[0], Count: len(tss)}
		default:
			t.Fatalf("prompt form %v", req.Prompt.Form)
		}
		if !reflect.DeepEqual(req.Prompt, want) {
			t.Errorf("prompt: got %+v, want %+v", req.Prompt, want)
		}
	case KindChat:
		if len(req.Messages) == 0 || len(req.Messages) != len(ref.Messages) {
			t.Fatalf("messages: got %d, want %d (>0)", len(req.Messages), len(ref.Messages))
		}
		for i, m := range req.Messages {
			if m.Role != ref.Messages[i].Role || m.Role == "" {
				t.Errorf("messages[%d].role: got %q, want %q", i, m.Role, ref.Messages[i].Role)
			}
			if m.OtherParts > m.Parts {
				t.Errorf("messages[%d]: got %d other parts of %d", i, m.OtherParts, m.Parts)
			}
		}
	}
}

// fuzzParse runs one parse and checks either the error or the result.
func fuzzParse(t *testing.T, kind Kind, body []byte) {
	req, err := ParseRequest(kind, body)
	if err != nil {
		var re *RequestError
		if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRequest) {
			t.Fatalf("got error %v, want a *RequestError matching ErrInvalidRequest", err)
		}
		// A syntax error is reported only for invalid JSON, and invalid
		// JSON is never blamed on one parameter.
		valid := json.Valid(body)
		if (valid && strings.Contains(re.Msg, errSyntax)) || (!valid && re.Param != "") {
			t.Fatalf("got error %v for %q, but json.Valid says %v", err, body, valid)
		}
		return
	}
	checkParsed(t, kind, body, req)
	// A parsed body survives the prefill rewrite as valid JSON.
	pb, err := PrefillBody(body)
	if err != nil {
		t.Fatalf("PrefillBody of a parsed body: %v", err)
	}
	preq, err := ParseRequest(kind, pb)
	if err != nil {
		t.Fatalf("parse of the prefill body %s: %v", pb, err)
	}
	if preq.Stream || preq.MaxTokens != 1 || preq.KVTransferParams == nil {
		t.Errorf("prefill body %s: got stream %v, max tokens %d, kv %s", pb, preq.Stream, preq.MaxTokens, preq.KVTransferParams)
	}
}

func FuzzParseCompletion(f *testing.F) {
	for _, s := range completionSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzParse(t, KindCompletion, body) })
}

func FuzzParseChat(f *testing.F) {
	for _, s := range chatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzParse(t, KindChat, body) })
}

func FuzzRewrite(f *testing.F) {
	for _, s := range append(append([]string{}, completionSeeds...), chatSeeds...) {
		f.Add([]byte(s), "stream", []byte("false"), "max_tokens")
	}
	f.Add([]byte(`{"a":1,"a":2}`), "a", []byte(`{"x":[1]}`), "b")
	f.Fuzz(func(t *testing.T, body []byte, setKey string, setVal []byte, delKey string) {
		edits := []Edit{Set(setKey, setVal), Delete(delKey)}
		got, err := Rewrite(body, edits...)
		var m map[string]any
		refErr := json.Unmarshal(body, &m)
		if err != nil {
			if refErr == nil && m != nil && json.Valid(setVal) && utf8.ValidString(setKey) && utf8.ValidString(delKey) {
				t.Fatalf("Rewrite(%q) failed with %v on a valid object", body, err)
			}
			return
		}
		if refErr != nil {
			t.Fatalf("Rewrite accepted %q that does not decode to an object: %v", body, refErr)
		}
		want := applyNaive(t, body, edits)
		var g map[string]any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("Rewrite output %q is not an object: %v", got, err)
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("Rewrite(%q):\n got %s\nwant %v", body, got, want)
		}
	})
}
