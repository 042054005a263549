package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzEncode checks on arbitrary text that encoding never panics, that
// the split patterns cut the text into non-empty pieces that cover it,
// and that byte-level encoding round-trips through Decode.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "Hello world", "It's 12345!\n\n  ok", "<|im_start|>user\nhi<|im_end|>", "\xff\xfe", "日本😀 ſ'S", "   \t\r\n", "<|im_"} {
		f.Add(s)
	}
	toks := map[string]*BPE{}
	for _, fx := range fixtures {
		toks[fx.name] = loadFixture(f, fx.name, Options{CacheSize: 64})
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, p := range []splitPattern{patternGPT2, patternLlama3, patternQwen2} {
			if got := strings.Join(splitAll(p, text), ""); got != text {
				t.Fatalf("pattern %d pieces join to %q, want %q", p, got, text)
			}
			for _, piece := range splitAll(p, text) {
				if piece == "" {
					t.Fatalf("pattern %d made an empty piece of %q", p, text)
				}
			}
		}
		for name, tok := range toks {
			ids := tok.EncodeString(text, true, nil)
			for _, id := range ids {
				if int(id) >= tok.VocabSize() {
					t.Fatalf("%s: Encode(%q) gave id %d beyond the vocabulary (%d)", name, text, id, tok.VocabSize())
				}
			}
			if name == "llama3" {
				ids = tok.EncodeString(text, false, nil)
				if got := tok.Decode(ids); got != text {
					t.Fatalf("llama3: Decode(Encode(%q)) got %q", text, got)
				}
			}
		}
	})
}

// FuzzLoad checks that Load returns an error or a working tokenizer for
// any input, and never panics.
func FuzzLoad(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.tokenizer.json")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{"", "null", "{}", "[]", `{"model":null}`, `{"model":{"type":"BPE"}}`,
		minimal("null", byteLevel, "null", `["a b"]`), minimal(`{"type":"NFC"}`, "null", `{"type":"RobertaProcessing","cls":["a",0],"sep":["b",1]}`, `[["a","b"]]`),
		minimal(`{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"}]}`, "null", `{"type":"BertProcessing","cls":[0],"sep":"x"}`, `["a b"]`),
		`{"model":{"type":"BPE","vocab":{"a":0},"merges":["a a"]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Load(data, Options{CacheSize: 16})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tokenizer: ") {
				t.Fatalf("Load error %q lacks the package prefix", err)
			}
			return
		}
		for _, s := range []string{"", "ab a b", "<|x|> Hello\n\n12345", "\xff日本"} {
			ids := tok.EncodeString(s, true, nil)
			_ = tok.Decode(ids)
		}
	})
}

// FuzzTokenizeResponse checks that any /tokenize response body decodes to
// ids or an ErrRemote error, and never panics.
func FuzzTokenizeResponse(f *testing.F) {
	for _, s := range []string{`{"tokens":[1,2,3],"count":3,"max_model_len":4096}`, `{"tokens":[]}`, `{"tokens":null}`,
		`{"tokens":[-1]}`, `{"tokens":[1.5]}`, `{"count":"x"}`, `[]`, ``, `{"tokens":[99999999999999999999]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ids, err := decodeTokenizeResponse(data, []uint32{7})
		if err != nil {
			if len(ids) != 1 || ids[0] != 7 {
				t.Fatalf("on error got dst %v, want [7]", ids)
			}
			if !strings.HasPrefix(err.Error(), "tokenizer: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
		}
	})
}
