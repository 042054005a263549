package tokenizer

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// update rewrites the fixtures under testdata/ from the trainer below.
var update = flag.Bool("update", false, "rewrite testdata/*.tokenizer.json")

// sampleCorpus is the text the fixtures' merges are learned from: plain
// English, some code and a little of other scripts, so that the merges
// cover words, spaces, newlines and punctuation runs.
const sampleCorpus = `The router reads the prompt, turns it into tokens and hashes the tokens
block by block. A pod that already holds the longest prefix of those blocks in
its cache can skip most of the prefill, so the request should go there, unless
that pod is already too busy. The cell keeps an exact index of which pod holds
which block, and the global tier routes between cells.

It's the tokenizer's job to produce exactly the same token ids as the engine.
If they differ by one token, every block hash after it differs too, and the
router would think that nothing is cached. That's why we test it so carefully:
we'll compare it with a reference, and they'd better agree on every input.

func (t *Tokenizer) Encode(text string) ([]uint32, error) {
	for i := 0; i < len(text); i++ {
		if text[i] == ' ' {
			continue
		}
	}
	return nil, nil
}

Numbers like 2024, 3.14159 and 1,000,000 appear in prompts, as do dates such
as 2025-01-31 and times like 12:30:45. Some users write in other languages:
Der schnelle braune Fuchs springt über den faulen Hund. Быстрая коричневая
лиса прыгает через ленивую собаку. 素早い茶色の狐が怠け者の犬を飛び越える。
Le renard brun rapide saute par-dessus le chien paresseux, n'est-ce pas?

    Indented lines, tabs	and  double  spaces matter too.
`

// trainBPE learns nMerges merges over the words of corpus, as a BPE trainer
// does: count adjacent symbol pairs weighted by word frequency and merge the
// most frequent pair (ties broken by the smaller pair, for determinism).
// Words are lists of initial symbols; it returns the merges in order.
func trainBPE(words map[string][]string, nMerges int) [][2]string {
	type word struct {
		syms  []string
		count int
	}
	keys := make([]string, 0, len(words))
	for k := range words {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ws []*word
	for _, k := range keys {
		ws = append(ws, &word{syms: append([]string(nil), words[k]...), count: 1})
	}
	var merges [][2]string
	for len(merges) < nMerges {
		pairs := map[[2]string]int{}
		for _, w := range ws {
			for i := 0; i+1 < len(w.syms); i++ {
				pairs[[2]string{w.syms[i], w.syms[i+1]}] += w.count
			}
		}
		var best [2]string
		bestN := 0
		for p, n := range pairs {
			if n > bestN || (n == bestN && (p[0] < best[0] || (p[0] == best[0] && p[1] < best[1]))) {
				best, bestN = p, n
			}
		}
		if bestN == 0 {
			break
		}
		merges = append(merges, best)
		for _, w := range ws {
			out := w.syms[:0]
			for i := 0; i < len(w.syms); i++ {
				if i+1 < len(w.syms) && w.syms[i] == best[0] && w.syms[i+1] == best[1] {
					out = append(out, best[0]+best[1])
					i++
				} else {
					out = append(out, w.syms[i])
				}
			}
			w.syms = out
		}
	}
	return merges
}

// byteLevelWords splits corpus with pattern p into byte-level words, each
// weighted once per occurrence (a word seen twice appears as key#2).
func byteLevelWords(corpus string, p splitPattern) map[string][]string {
	words := map[string][]string{}
	seen := map[string]int{}
	for i := 0; i < len(corpus); {
		end := p.next(corpus, i)
		piece := corpus[i:end]
		i = end
		seen[piece]++
		var syms []string
		for j := 0; j < len(piece); j++ {
			syms = append(syms, string(byteToRune[piece[j]]))
		}
		words[fmt.Sprintf("%s#%d", piece, seen[piece])] = syms
	}
	return words
}

// fixture describes one hand-made tokenizer.json.
type fixture struct {
	name string
	json func() ([]byte, error)
}

// fixtures lists the committed tokenizer.json files under testdata/.
var fixtures = []fixture{
	{"gpt2", gpt2Fixture},
	{"llama3", llama3Fixture},
	{"qwen2", qwen2Fixture},
	{"sentencepiece", sentencePieceFixture},
}

// byteLevelVocab returns the 256 byte tokens in byte order, then the merged
// tokens in merge order.
func byteLevelVocab(merges [][2]string) (map[string]uint32, uint32) {
	vocab := map[string]uint32{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = uint32(b)
	}
	next := uint32(256)
	for _, m := range merges {
		if _, ok := vocab[m[0]+m[1]]; !ok {
			vocab[m[0]+m[1]] = next
			next++
		}
	}
	return vocab, next
}

// addedJSON renders added tokens with ids from first on.
func addedJSON(first uint32, contents ...string) []map[string]any {
	var out []map[string]any
	for i, c := range contents {
		out = append(out, map[string]any{"id": first + uint32(i), "content": c, "single_word": false,
			"lstrip": false, "rstrip": false, "normalized": false, "special": strings.HasPrefix(c, "<|")})
	}
	return out
}

// mergeStrings renders merges in the legacy "a b" form.
func mergeStrings(merges [][2]string) []string {
	out := make([]string, len(merges))
	for i, m := range merges {
		out[i] = m[0] + " " + m[1]
	}
	return out
}

func byteLevelPre(addPrefix, useRegex bool) map[string]any {
	return map[string]any{"type": "ByteLevel", "add_prefix_space": addPrefix, "trim_offsets": true, "use_regex": useRegex}
}

func splitPre(regex string) map[string]any {
	return map[string]any{"type": "Split", "pattern": map[string]string{"Regex": regex}, "behavior": "Isolated", "invert": false}
}

func tokenizerJSON(added []map[string]any, normalizer, pre, post any, model map[string]any) ([]byte, error) {
	doc := map[string]any{"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post, "decoder": map[string]any{"type": "ByteLevel"}, "model": model}
	return json.MarshalIndent(doc, "", " ")
}

func bpeModelJSON(vocab map[string]uint32, merges any, extra map[string]any) map[string]any {
	m := map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
		"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab, "merges": merges}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// gpt2Fixture is GPT-2 style: ByteLevel with its implicit regex and a
// prefix space (as RoBERTa), merges as "a b" strings, one special token.
func gpt2Fixture() ([]byte, error) {
	merges := trainBPE(byteLevelWords(" "+sampleCorpus, patternGPT2), 300)
	vocab, next := byteLevelVocab(merges)
	return tokenizerJSON(addedJSON(next, "<|endoftext|>"), nil, byteLevelPre(true, true),
		byteLevelPre(true, true), bpeModelJSON(vocab, mergeStrings(merges), nil))
}

// llama3Fixture is Llama-3 style: Split with Llama-3's regex, ByteLevel
// without regex, ignore_merges, and a template that adds BOS.
func llama3Fixture() ([]byte, error) {
	merges := trainBPE(byteLevelWords(sampleCorpus, patternLlama3), 400)
	vocab, next := byteLevelVocab(merges)
	added := addedJSON(next, "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")
	pre := map[string]any{"type": "Sequence", "pretokenizers": []any{splitPre(llama3Regex), byteLevelPre(false, false)}}
	post := map[string]any{"type": "Sequence", "processors": []any{byteLevelPre(true, true), map[string]any{
		"type":           "TemplateProcessing",
		"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|begin_of_text|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
		"pair":           []any{},
		"special_tokens": map[string]any{"<|begin_of_text|>": map[string]any{"id": "<|begin_of_text|>", "ids": []uint32{next}, "tokens": []string{"<|begin_of_text|>"}}},
	}}}
	return tokenizerJSON(added, nil, pre, post, bpeModelJSON(vocab, mergeStrings(merges), map[string]any{"ignore_merges": true}))
}

// qwen2Fixture is Qwen2 style: NFC, Split with Qwen2's regex (single
// digits), merges as [a, b] pairs, ChatML special tokens and one
// non-special added token.
func qwen2Fixture() ([]byte, error) {
	merges := trainBPE(byteLevelWords(sampleCorpus, patternQwen2), 400)
	vocab, next := byteLevelVocab(merges)
	added := addedJSON(next, "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>")
	pre := map[string]any{"type": "Sequence", "pretokenizers": []any{splitPre(qwen2Regex), byteLevelPre(false, false)}}
	return tokenizerJSON(added, map[string]any{"type": "NFC"}, pre, byteLevelPre(false, false), bpeModelJSON(vocab, merges, nil))
}

// sentencePieceFixture is Llama-2 style: normalizer Prepend "▁" and
// Replace " " with "▁", no pre-tokenizer, byte fallback, <unk>, and a
// template that adds <s>. Characters outside the corpus fall back to bytes.
func sentencePieceFixture() ([]byte, error) {
	text := strings.ReplaceAll("\u2581"+sampleCorpus, " ", "\u2581")
	vocab := map[string]uint32{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := 0; b < 256; b++ {
		vocab[fmt.Sprintf("<0x%02X>", b)] = uint32(3 + b)
	}
	next := uint32(259)
	words := map[string][]string{}
	n := 0
	for _, w := range strings.SplitAfter(strings.ReplaceAll(text, "\u2581", "\x00\u2581"), "\x00") {
		w = strings.TrimSuffix(w, "\x00")
		var syms []string
		for _, r := range w {
			syms = append(syms, string(r))
			if _, ok := vocab[string(r)]; !ok && r < 0x3000 {
				vocab[string(r)] = next
				next++
			}
		}
		n++
		words[fmt.Sprintf("%s#%d", w, n)] = syms
	}
	// Characters not in the vocabulary (CJK here) cannot be merged.
	for k, syms := range words {
		for _, s := range syms {
			if r, _ := utf8.DecodeRuneInString(s); r >= 0x3000 {
				delete(words, k)
				break
			}
		}
	}
	merges := trainBPE(words, 400)
	for _, m := range merges {
		if _, ok := vocab[m[0]+m[1]]; !ok {
			vocab[m[0]+m[1]] = next
			next++
		}
	}
	added := []map[string]any{}
	for i, c := range []string{"<unk>", "<s>", "</s>"} {
		added = append(added, map[string]any{"id": i, "content": c, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	norm := map[string]any{"type": "Sequence", "normalizers": []any{
		map[string]any{"type": "Prepend", "prepend": "\u2581"},
		map[string]any{"type": "Replace", "pattern": map[string]string{"String": " "}, "content": "\u2581"}}}
	post := map[string]any{"type": "TemplateProcessing",
		"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
		"pair":           []any{},
		"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []uint32{1}, "tokens": []string{"<s>"}}}}
	return tokenizerJSON(added, norm, nil, post, bpeModelJSON(vocab, mergeStrings(merges),
		map[string]any{"unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true}))
}

// TestFixturesUpToDate checks that each committed fixture is exactly what
// the trainer produces, so the fixtures stay reproducible; run with
// -update to rewrite them.
func TestFixturesUpToDate(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			want, err := f.json()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", f.name+".tokenizer.json")
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the trainer's output (%d vs %d bytes); run go test -run TestFixturesUpToDate -update", path, len(got), len(want))
			}
		})
	}
}

// loadFixture loads testdata/NAME.tokenizer.json.
func loadFixture(t testing.TB, name string, opts Options) *BPE {
	t.Helper()
	tok, err := LoadFile(filepath.Join("testdata", name+".tokenizer.json"), opts)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return tok
}
