package tokenizer

import _ "embed"

// demoJSON is testdata/qwen2.tokenizer.json.
//
//go:embed testdata/qwen2.tokenizer.json
var demoJSON []byte

// DemoChatTemplate is the chat template that goes with DemoJSON.
const DemoChatTemplate = "chatml"

// DemoJSON returns a small tokenizer.json for demonstrations and
// benchmarks: a Qwen2-style byte-level BPE (660 ids, with the ChatML
// special tokens <|im_start|>, <|im_end|> and <|endoftext|>) whose merges
// were learned in this repository from a sample corpus (fixture_test.go
// writes it). It is no real model's vocabulary, but it tokenizes any text
// through the same code as a real one, so the local fleet's simulated
// pods, cells and global tier can share a tokenizer without a model
// download. The caller may modify the returned copy.
func DemoJSON() []byte { return append([]byte(nil), demoJSON...) }
