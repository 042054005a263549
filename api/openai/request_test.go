package openai

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseCompletion(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Request
	}{
		{
			name: "string prompt",
			body: `{"model":"llama","prompt":"Hello there","max_tokens":16,"temperature":0.7}`,
			want: Request{Kind: KindCompletion, Model: "llama", MaxTokens: 16,
				Prompt: Prompt{Form: PromptText, Text: "Hello there", Count: 1}},
		},
		{
			name: "string batch routes by the first",
			body: `{"model":"m","prompt":["first","second","third"]}`,
			want: Request{Kind: KindCompletion, Model: "m", MaxTokens: -1,
				Prompt: Prompt{Form: PromptTexts, Text: "first", Count: 3}},
		},
		{
			name: "token ids with whitespace",
			body: "{\"prompt\": [ 1, 22 ,333,\n 4294967295 ], \"stream\": true, \"stream_options\": {\"include_usage\": true}}",
			want: Request{Kind: KindCompletion, Stream: true, IncludeUsage: true, MaxTokens: -1,
				Prompt: Prompt{Form: PromptTokens, Tokens: []uint32{1, 22, 333, 4294967295}, Count: 1}},
		},
		{
			name: "token batch",
			body: `{"model":"m","prompt":[[1,2,3],[4,5],[6]]}`,
			want: Request{Kind: KindCompletion, Model: "m", MaxTokens: -1,
				Prompt: Prompt{Form: PromptTokenBatch, Tokens: []uint32{1, 2, 3}, Count: 3}},
		},
		{
			name: "vLLM extensions",
			body: `{"model":"sql-lora","prompt":"x","cache_salt":"tenant-7","user":"u1","kv_transfer_params":{"do_remote_decode":true},"max_tokens":null}`,
			want: Request{Kind: KindCompletion, Model: "sql-lora", MaxTokens: -1, CacheSalt: "tenant-7", User: "u1",
				KVTransferParams: []byte(`{"do_remote_decode":true}`),
				Prompt:           Prompt{Form: PromptText, Text: "x", Count: 1}},
		},
		{
			name: "null kv_transfer_params is absent",
			body: `{"prompt":"x","kv_transfer_params":null}`,
			want: Request{Kind: KindCompletion, MaxTokens: -1, Prompt: Prompt{Form: PromptText, Text: "x", Count: 1}},
		},
		{
			name: "well-known sampling fields in range, or null",
			body: `{"prompt":[5],"temperature":1.5,"top_p":null,"n":2,"seed":-7,"presence_penalty":-2,"frequency_penalty":0.5,"stop":["\n","###"]}`,
			want: Request{Kind: KindCompletion, MaxTokens: -1, Prompt: Prompt{Form: PromptTokens, Tokens: []uint32{5}, Count: 1}},
		},
		{
			name: "max_completion_tokens wins",
			body: `{"prompt":"x","max_tokens":5,"max_completion_tokens":9}`,
			want: Request{Kind: KindCompletion, MaxTokens: 9, Prompt: Prompt{Form: PromptText, Text: "x", Count: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCompletion([]byte(tt.body))
			if err != nil {
				t.Fatalf("ParseCompletion: got error %v, want nil", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("ParseCompletion:\n got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestParseChat(t *testing.T) {
	body := `{"model":"llama","messages":[
		{"role":"system","content":"You are terse."},
		{"role":"user","name":"ann","content":[{"type":"text","text":"Look:"},{"type":"image_url","image_url":{"url":"http://x/y.png"}},{"type":"text","text":"what is it?"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"42"}
	],"max_completion_tokens":64,"stream":true,"tools":[{"type":"function"}]}`
	got, err := ParseChat([]byte(body))
	if err != nil {
		t.Fatalf("ParseChat: got error %v, want nil", err)
	}
	want := Request{Kind: KindChat, Model: "llama", Stream: true, MaxTokens: 64, Messages: []Message{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Name: "ann", Content: "Look:\nwhat is it?", Parts: 3, OtherParts: 1},
		{Role: "assistant"},
		{Role: "tool", Content: "42"},
	}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("ParseChat:\n got %+v\nwant %+v", *got, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		kind      Kind
		body      string
		wantParam string
		wantIn    string
	}{
		{"empty", KindCompletion, "  ", "", "empty"},
		{"not an object", KindCompletion, `["prompt"]`, "", "JSON object"},
		{"bad JSON", KindCompletion, `{"prompt":"x"`, "", "not valid JSON"},
		{"no prompt", KindCompletion, `{"model":"m"}`, "prompt", "required"},
		{"null prompt", KindCompletion, `{"prompt":null}`, "prompt", "required"},
		{"number prompt", KindCompletion, `{"prompt":7}`, "prompt", "must be a string"},
		{"empty token list", KindCompletion, `{"prompt":[]}`, "prompt", "empty"},
		{"negative token", KindCompletion, `{"prompt":[1,-2]}`, "prompt", "non-negative"},
		{"float token", KindCompletion, `{"prompt":[1,2.5]}`, "prompt", "integers"},
		{"huge token", KindCompletion, `{"prompt":[4294967296]}`, "prompt", "exceeds"},
		{"mixed token list", KindCompletion, `{"prompt":[1,"a"]}`, "prompt", "non-negative"},
		{"mixed batch", KindCompletion, `{"prompt":[[1],2]}`, "prompt", "must be a string"},
		{"empty inner batch", KindCompletion, `{"prompt":[[1],[]]}`, "prompt[1]", "empty"},
		{"model not a string", KindCompletion, `{"model":3,"prompt":"x"}`, "model", "string"},
		{"stream not a bool", KindCompletion, `{"prompt":"x","stream":"yes"}`, "stream", "boolean"},
		{"max_tokens float", KindCompletion, `{"prompt":"x","max_tokens":1.5}`, "max_tokens", "integer"},
		{"trailing garbage", KindCompletion, `{"prompt":"x"} x`, "", "not valid JSON"},
		{"trailing comma", KindCompletion, `{"prompt":"x",}`, "", "not valid JSON"},
		{"bad literal in an unknown field", KindCompletion, `{"echo":tru,"prompt":"x"}`, "", "not valid JSON"},
		{"bad escape in an unknown field", KindCompletion, `{"prompt":"x","suffix":"\q"}`, "", "not valid JSON"},
		{"control character in a string", KindCompletion, "{\"prompt\":\"a\tb\"}", "", "not valid JSON"},
		{"unterminated", KindCompletion, `{"prompt":[1,2`, "", "not valid JSON"},
		{"bad key", KindCompletion, `{prompt:"x"}`, "", "not valid JSON"},
		{"mismatched brackets", KindCompletion, `{"logit_bias":[1},"prompt":"x"}`, "", "not valid JSON"},
		{"plus sign", KindCompletion, `{"prompt":"x","max_tokens":+5}`, "", "not valid JSON"},
		{"prompt in a chat is still checked", KindChat, `{"prompt":[1,,2],"messages":[{"role":"user","content":"x"}]}`, "", "not valid JSON"},
		{"max_tokens negative", KindCompletion, `{"prompt":"x","max_tokens":-1}`, "max_tokens", "negative"},
		{"kv params not object", KindCompletion, `{"prompt":"x","kv_transfer_params":[1]}`, "kv_transfer_params", "object"},
		{"no messages", KindChat, `{"model":"m"}`, "messages", "required"},
		{"empty messages", KindChat, `{"messages":[]}`, "messages", "empty"},
		{"messages not array", KindChat, `{"messages":{"role":"user"}}`, "messages", "array"},
		{"no role", KindChat, `{"messages":[{"content":"hi"}]}`, "messages[0].role", "required"},
		{"content number", KindChat, `{"messages":[{"role":"user","content":5}]}`, "messages[0].content", "must be a string"},
		{"part without type", KindChat, `{"messages":[{"role":"user","content":[{"text":"a"}]}]}`, "messages[0].content[0].type", "required"},
		{"model twice", KindCompletion, `{"model":"a","prompt":"x","model":"b"}`, "model", "more than once"},
		{"model twice, once escaped", KindCompletion, `{"model":"a","prompt":"x","mod\u0065l":"b"}`, "model", "more than once"},
		{"unknown field twice", KindCompletion, `{"prompt":"x","echo":true,"echo":false}`, "echo", "more than once"},
		{"role twice in a message", KindChat, `{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b","role":"system"}]}`, "messages[1].role", "more than once"},
		{"text twice in a part", KindChat, `{"messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`, "messages[0].content[0].text", "more than once"},
		{"include_usage twice", KindCompletion, `{"prompt":"x","stream_options":{"include_usage":true,"include_usage":false}}`, "stream_options.include_usage", "more than once"},
		{"invalid UTF-8 in a prompt", KindCompletion, "{\"prompt\":\"a\xffb\"}", "prompt", "UTF-8"},
		{"invalid UTF-8 in a message", KindChat, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\"}]}", "messages", "UTF-8"},
		{"invalid UTF-8 in a key", KindCompletion, "{\"prompt\":\"x\",\"\xfe\":1}", "", "UTF-8"},
		{"temperature a string", KindCompletion, `{"prompt":"x","temperature":"hot"}`, "temperature", "number"},
		{"temperature negative", KindCompletion, `{"prompt":"x","temperature":-0.5}`, "temperature", "at least 0"},
		{"top_p past 1", KindCompletion, `{"prompt":"x","top_p":1.5}`, "top_p", "from 0 to 1"},
		{"n negative", KindCompletion, `{"prompt":"x","n":-5}`, "n", "at least 1"},
		{"n a float", KindCompletion, `{"prompt":"x","n":2.5}`, "n", "integer"},
		{"n a bool", KindChat, `{"messages":[{"role":"user","content":"x"}],"n":true}`, "n", "integer"},
		{"seed a string", KindCompletion, `{"prompt":"x","seed":"1"}`, "seed", "integer"},
		{"presence_penalty past 2", KindCompletion, `{"prompt":"x","presence_penalty":3}`, "presence_penalty", "from -2 to 2"},
		{"stop a number", KindCompletion, `{"prompt":"x","stop":5}`, "stop", "array of strings"},
		{"stop with a number", KindCompletion, `{"prompt":"x","stop":["a",5]}`, "stop", "array of strings"},
		{"temperature bad JSON", KindCompletion, `{"prompt":"x","temperature":1.}`, "", "not valid JSON"},
		{"part text not string", KindChat, `{"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "messages[0].content.text", "string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRequest(tt.kind, []byte(tt.body))
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("ParseRequest: got error %v, want a *RequestError", err)
			}
			if !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("ParseRequest: got %v, want it to match ErrInvalidRequest", err)
			}
			if re.Param != tt.wantParam {
				t.Errorf("ParseRequest: got param %q, want %q (error %v)", re.Param, tt.wantParam, err)
			}
			if !strings.Contains(err.Error(), tt.wantIn) || !strings.HasPrefix(err.Error(), "openai: ") {
				t.Errorf("ParseRequest: got error %q, want it prefixed openai: and containing %q", err, tt.wantIn)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		path string
		want Kind
		ok   bool
	}{
		{"/v1/completions", KindCompletion, true},
		{"/v1/chat/completions", KindChat, true},
		{"/v1/models", 0, false},
	}
	for _, tt := range tests {
		got, ok := KindOf(tt.path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("KindOf(%q): got %v, %v, want %v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}
