package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

// applyNaive is the reference model of Rewrite: decode into a map, apply
// the edits, and return the map.
func applyNaive(t *testing.T, body []byte, edits []Edit) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("reference decode: %v", err)
	}
	for _, e := range edits {
		_, present := m[e.Key]
		switch {
		case e.Value == nil:
			delete(m, e.Key)
		case e.IfPresent && !present:
		default:
			var v any
			if err := json.Unmarshal(e.Value, &v); err != nil {
				t.Fatalf("reference decode of %s: %v", e.Key, err)
			}
			m[e.Key] = v
		}
	}
	return m
}

func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

func TestRewriteMatchesReference(t *testing.T) {
	bodies := []string{
		`{}`,
		`{"a":1}`,
		` { "model" : "m" , "prompt" : [1,2,3], "x":{"y":[{"z":"}\"]"}]}, "stream":true } `,
		`{"max_tokens":100,"stream_options":{"include_usage":true},"weird\u0041key":"v"}`,
		`{"a":1,"a":2,"b":[]}`,
	}
	editSets := [][]Edit{
		nil,
		{Set("stream", json.RawMessage("false"))},
		{Delete("a"), Delete("model")},
		{Set("a", json.RawMessage(`{"k":[1,2]}`)), Delete("b")},
		{Edit{Key: "max_tokens", Value: json.RawMessage("1"), IfPresent: true}, Edit{Key: "max_completion_tokens", Value: json.RawMessage("1"), IfPresent: true}},
		{Set("weirdAkey", json.RawMessage(`"w"`)), Set("new", json.RawMessage(`null`))},
		{Set("x", json.RawMessage("1")), Set("x", json.RawMessage("2"))},
	}
	for _, body := range bodies {
		for _, edits := range editSets {
			got, err := Rewrite([]byte(body), edits...)
			if err != nil {
				t.Fatalf("Rewrite(%s, %v): %v", body, edits, err)
			}
			want := applyNaive(t, []byte(body), edits)
			if g := decodeMap(t, got); !reflect.DeepEqual(g, want) {
				t.Errorf("Rewrite(%s, %v):\n got %s = %v\nwant %v", body, edits, got, g, want)
			}
		}
	}
}

func TestRewriteKeepsUntouchedBytes(t *testing.T) {
	body := `{"model":"m", "temperature":0.70, "logit_bias":{"50256":-100}, "stream":true}`
	got, err := Rewrite([]byte(body), Set("stream", json.RawMessage("false")))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m", "temperature":0.70, "logit_bias":{"50256":-100}, "stream":false}`
	if string(got) != want {
		t.Errorf("Rewrite: got %s, want %s", got, want)
	}
}

func TestRewriteErrors(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		edits []Edit
	}{
		{"not JSON", `{"a":`, nil},
		{"not an object", `[1]`, nil},
		{"bad value", `{}`, []Edit{Set("a", json.RawMessage("{"))}},
	}
	for _, tt := range tests {
		if _, err := Rewrite([]byte(tt.body), tt.edits...); err == nil {
			t.Errorf("%s: Rewrite got nil error, want one", tt.name)
		}
	}
}

func TestPrefillBody(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":300,"temperature":0.5}`
	got, err := PrefillBody([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	m := decodeMap(t, got)
	wantKV := map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "remote_engine_id": nil,
		"remote_block_ids": nil, "remote_host": nil, "remote_port": nil}
	checks := []struct {
		key  string
		want any
	}{
		{"max_tokens", 1.0}, {"max_completion_tokens", 1.0}, {"stream", false},
		{"kv_transfer_params", wantKV}, {"temperature", 0.5}, {"model", "m"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(m[c.key], c.want) {
			t.Errorf("PrefillBody %s: got %v, want %v", c.key, m[c.key], c.want)
		}
	}
	if _, ok := m["stream_options"]; ok {
		t.Errorf("PrefillBody: got stream_options kept, want it removed")
	}
	// Without max_completion_tokens, none is added.
	got, err = PrefillBody([]byte(`{"prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeMap(t, got)["max_completion_tokens"]; ok {
		t.Errorf("PrefillBody: got max_completion_tokens added, want it absent")
	}
}

func TestDecodeBody(t *testing.T) {
	body := `{"prompt":"x","stream":true,"kv_transfer_params":{"do_remote_decode":true}}`
	prefillKV := `{"do_remote_prefill":true,"do_remote_decode":false,"remote_block_ids":[1,2,3],"remote_engine_id":"e1","remote_host":"10.0.0.1","remote_port":5600,"tp_size":1}`
	tests := []struct {
		name   string
		params string
		want   any
	}{
		{"prefill params passed through", prefillKV, decodeMap(t, []byte(prefillKV))},
		{"flags forced", `{"remote_engine_id":"e2","do_remote_decode":true}`,
			map[string]any{"remote_engine_id": "e2", "do_remote_decode": false, "do_remote_prefill": true}},
		{"null params: no transfer", `null`, nil},
		{"empty params: no transfer", ` { } `, nil},
		{"absent params: no transfer", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var params json.RawMessage
			if tt.params != "" {
				params = json.RawMessage(tt.params)
			}
			got, err := DecodeBody([]byte(body), params)
			if err != nil {
				t.Fatal(err)
			}
			m := decodeMap(t, got)
			if !reflect.DeepEqual(m["kv_transfer_params"], tt.want) {
				t.Errorf("DecodeBody kv_transfer_params: got %v, want %v", m["kv_transfer_params"], tt.want)
			}
			if m["stream"] != true || m["prompt"] != "x" {
				t.Errorf("DecodeBody: got %s, want stream and prompt kept", got)
			}
		})
	}
	if _, err := DecodeBody([]byte(body), json.RawMessage(`[1]`)); err == nil {
		t.Errorf("DecodeBody with array params: got nil error, want one")
	}
}

func TestKVTransferParams(t *testing.T) {
	tests := []struct {
		resp string
		want string
	}{
		{`{"id":"cmpl-1","choices":[],"kv_transfer_params":{"remote_host":"h"}}`, `{"remote_host":"h"}`},
		{`{"id":"cmpl-1","kv_transfer_params":null}`, ``},
		{`{"id":"cmpl-1"}`, ``},
	}
	for _, tt := range tests {
		got, err := KVTransferParams([]byte(tt.resp))
		if err != nil {
			t.Fatalf("KVTransferParams(%s): %v", tt.resp, err)
		}
		if string(got) != tt.want {
			t.Errorf("KVTransferParams(%s): got %s, want %s", tt.resp, got, tt.want)
		}
	}
	if _, err := KVTransferParams([]byte(`not json`)); err == nil {
		t.Errorf("KVTransferParams(not json): got nil error, want one")
	}
}
