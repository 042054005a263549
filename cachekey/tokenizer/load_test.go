package tokenizer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// minimalJSON is a tiny valid byte-level tokenizer.json with parts that
// the cases below replace.
const minimalJSON = `{"added_tokens":[{"id":4,"content":"<|x|>","special":true}],
"normalizer":NORM,"pre_tokenizer":PRE,"post_processor":POST,
"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3},"merges":MERGES}}`

func minimal(norm, pre, post, merges string) string {
	r := strings.NewReplacer("NORM", norm, "PRE", pre, "POST", post, "MERGES", merges)
	return r.Replace(minimalJSON)
}

const byteLevel = `{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}`

// TestLoadErrors checks that unsupported and malformed files are refused
// with errors that say why.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr error
		wantMsg string
	}{
		{"not json", `{`, ErrInvalid, "invalid"},
		{"no model", `{}`, ErrInvalid, "no model"},
		{"wordpiece", `{"model":{"type":"WordPiece","vocab":{"a":0}}}`, ErrUnsupported, "model WordPiece"},
		{"metaspace", minimal("null", `{"type":"Metaspace","replacement":"▁"}`, "null", `["a b"]`), ErrUnsupported, "unsupported pre_tokenizer Metaspace"},
		{"unknown split regex", minimal("null", `{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Isolated","invert":false}`, "null", `["a b"]`), ErrUnsupported, "Split regex"},
		{"split removed", minimal("null", `{"type":"Split","pattern":{"String":" "},"behavior":"Removed","invert":false}`, "null", `["a b"]`), ErrUnsupported, "Split without a Regex"},
		{"regex replace", minimal(`{"type":"Replace","pattern":{"Regex":" +"},"content":" "}`, byteLevel, "null", `["a b"]`), ErrUnsupported, "normalizer Replace"},
		{"lowercase", minimal(`{"type":"Lowercase"}`, byteLevel, "null", `["a b"]`), ErrUnsupported, "normalizer Lowercase"},
		{"bad post processor", minimal("null", byteLevel, `{"type":"Frobnicate"}`, `["a b"]`), ErrUnsupported, "post_processor Frobnicate"},
		{"merge out of vocab", minimal("null", byteLevel, "null", `["a c"]`), ErrInvalid, "not in vocab"},
		{"merge three parts", minimal("null", byteLevel, "null", `["a b c"]`), ErrInvalid, "not two tokens"},
		{"merge bad pair", minimal("null", byteLevel, "null", `[["a"]]`), ErrInvalid, "neither"},
		{"template without A", minimal("null", byteLevel, `{"type":"TemplateProcessing","single":[],"special_tokens":{}}`, `["a b"]`), ErrInvalid, "no $A"},
		{"dropout", `{"model":{"type":"BPE","dropout":0.1,"vocab":{"a":0},"merges":[]}}`, ErrUnsupported, "dropout"},
		{"huge id", `{"model":{"type":"BPE","vocab":{"a":4000000000},"merges":[]}}`, ErrInvalid, "too large"},
		{"empty vocab", `{"model":{"type":"BPE","vocab":{},"merges":[]}}`, ErrInvalid, "empty vocab"},
		{"single word", `{"added_tokens":[{"id":0,"content":"x","single_word":true}],"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, ErrUnsupported, "single_word"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.json), Options{})
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) || !strings.HasPrefix(err.Error(), "tokenizer: ") {
				t.Errorf("Load got error %v, want %v containing %q", err, tt.wantErr, tt.wantMsg)
			}
		})
	}
}

// TestLoadMinimal checks that the minimal file loads and encodes, with
// merges in both forms.
func TestLoadMinimal(t *testing.T) {
	for _, merges := range []string{`["a b"]`, `[["a","b"]]`} {
		tok, err := Load([]byte(minimal("null", byteLevel, "null", merges)), Options{})
		if err != nil {
			t.Fatalf("Load with merges %s: %v", merges, err)
		}
		if got := tok.EncodeString("ab<|x|>a", false, nil); len(got) != 3 || got[0] != 2 || got[1] != 4 || got[2] != 0 {
			t.Errorf("merges %s: Encode(ab<|x|>a) got %v, want [2 4 0]", merges, got)
		}
	}
}

// TestLoadFileMissing checks the error for a missing file.
func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile("testdata/does-not-exist.json", Options{})
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "tokenizer: load ") {
		t.Errorf("LoadFile(missing) got %v, want a tokenizer: load error wrapping ErrNotExist", err)
	}
}

// TestDemoJSONIsTheFixture checks that the embedded demo tokenizer is the
// committed Qwen2-style fixture, loads, and has its chat template's
// special tokens.
func TestDemoJSONIsTheFixture(t *testing.T) {
	want, err := os.ReadFile("testdata/qwen2.tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := DemoJSON(); !bytes.Equal(got, want) {
		t.Fatalf("DemoJSON() differs from testdata/qwen2.tokenizer.json")
	}
	tmpl, err := ChatTemplateByName(DemoChatTemplate)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Load(DemoJSON(), Options{ChatTemplate: tmpl})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.EncodeChat(context.Background(), []Message{{Role: "user", Content: "hi"}}, nil)
	if err != nil || len(ids) == 0 || tok.Decode(ids) != "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" {
		t.Fatalf("EncodeChat = %v (%q), %v", ids, tok.Decode(ids), err)
	}
}
