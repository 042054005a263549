//go:build tokenizer_real

package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRealModels compares the tokenizer with the oracle on real
// tokenizer.json files that are too large to commit. It is built only with
// -tags tokenizer_real, and TOKENIZER_REAL_DIR must name a directory of
// NAME.tokenizer.json and NAME.golden.json pairs (see testdata/oracle.mjs).
func TestRealModels(t *testing.T) {
	dir := os.Getenv("TOKENIZER_REAL_DIR")
	if dir == "" {
		t.Fatal("TOKENIZER_REAL_DIR is not set")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.tokenizer.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.tokenizer.json in %s (err %v)", dir, err)
	}
	for _, f := range files {
		name := filepath.Base(f[:len(f)-len(".tokenizer.json")])
		t.Run(name, func(t *testing.T) {
			tok, err := LoadFile(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tok, filepath.Join(dir, name+".golden.json"))
		})
	}
}

// BenchmarkRealModels encodes a 2k-token English prompt with each real
// tokenizer.json of TOKENIZER_REAL_DIR, with a warm cache and without one.
func BenchmarkRealModels(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(os.Getenv("TOKENIZER_REAL_DIR"), "*.tokenizer.json"))
	if len(files) == 0 {
		b.Fatal("TOKENIZER_REAL_DIR has no *.tokenizer.json")
	}
	for _, f := range files {
		name := filepath.Base(f[:len(f)-len(".tokenizer.json")])
		for _, size := range []int{0, -1} {
			label := map[int]string{0: "cached", -1: "nocache"}[size]
			b.Run(name+"/"+label, func(b *testing.B) {
				tok, err := LoadFile(f, Options{CacheSize: size})
				if err != nil {
					b.Fatal(err)
				}
				benchEncode(b, tok, englishPrompt(tok, 2000))
			})
		}
	}
}
