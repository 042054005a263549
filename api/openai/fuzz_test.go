package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
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
	`{"model":"a","prompt":"x","model":"b"}`,
	`{"prompt":"x","temperature":"hot","n":-5,"top_p":0.9,"seed":3,"stop":["a"]}`,
	"{\"prompt\":\"\xff\"}",
	`{"prompt":"x","stream_options":{"include_usage":true,"include_usage":true}}`,
	`{"prompt":["ok","\ud800"]}`,
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
	`{"messages":[{"role":"user","content":"a","role":"x"}],"n":1}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"a","type":"text"}]}]}`,
	"{\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\"}]}",
}

// checkParsed checks the invariants of a successful parse against
// encoding/json as the reference decoder.
func checkParsed(t *testing.T, kind Kind, body []byte, req *Request) {
	t.Helper()
	if !json.Valid(body) {
		t.Fatalf("parse accepted invalid JSON %q", body)
	}
	if !utf8.Valid(body) {
		t.Fatalf("parse accepted invalid UTF-8 %q", body)
	}
	if k, dup := topLevelDuplicate(t, body); dup {
		t.Fatalf("parse accepted %q with %q twice", body, k)
	}
	checkKnownFields(t, body)
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

// topLevelDuplicate is the naive reference of the duplicate check at the
// top level: encoding/json's tokens, every key in a map.
func topLevelDuplicate(t *testing.T, body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("reference: %q does not start an object", body)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("reference key of %q: %v", body, err)
		}
		k := tok.(string)
		if seen[k] {
			return k, true
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("reference value of %q: %v", body, err)
		}
	}
	return "", false
}

// checkKnownFields holds an accepted body's sampling fields to their types
// and ranges, decoded by encoding/json.
func checkKnownFields(t *testing.T, body []byte) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("reference decode of %q: %v", body, err)
	}
	num := func(k string, lo, hi float64) {
		if v, ok := m[k]; ok {
			var f *float64
			if err := json.Unmarshal(v, &f); err != nil || (f != nil && (*f < lo || *f > hi)) {
				t.Fatalf("accepted %s = %s in %q", k, v, body)
			}
		}
	}
	num("temperature", 0, math.Inf(1))
	num("top_p", 0, 1)
	num("presence_penalty", -2, 2)
	num("frequency_penalty", -2, 2)
	if v, ok := m["n"]; ok {
		var n *int64
		if err := json.Unmarshal(v, &n); err != nil || (n != nil && *n < 1) {
			t.Fatalf("accepted n = %s in %q", v, body)
		}
	}
	if v, ok := m["stop"]; ok && string(v) != "null" {
		var one string
		var many []string
		if json.Unmarshal(v, &one) != nil && json.Unmarshal(v, &many) != nil {
			t.Fatalf("accepted stop = %s in %q", v, body)
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
		// A top-level field blamed for repeating does repeat.
		if valid && strings.Contains(re.Msg, "more than once") && !strings.ContainsAny(re.Param, ".[") {
			if k, dup := topLevelDuplicate(t, body); !dup || k != re.Param {
				t.Fatalf("got error %v for %q, but the reference finds %q twice: %v", err, body, k, dup)
			}
		}
		return
	}
	checkParsed(t, kind, body, req)
	// encoding/json turns a lone surrogate escape into U+FFFD: text read
	// from a body with no U+FFFD of its own has none.
	if !bytes.Contains(body, []byte("\uFFFD")) && !bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`)) {
		texts := []string{req.Prompt.Text}
		for _, m := range req.Messages {
			texts = append(texts, m.Content)
		}
		for _, x := range texts {
			if strings.ContainsRune(x, utf8.RuneError) {
				t.Fatalf("accepted %q, whose text %q holds U+FFFD from an unpaired surrogate", body, x)
			}
		}
	}
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
