package tokenizer

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"os"
	"strings"
)

// fileJSON is the part of a tokenizer.json that encoding depends on.
// Truncation and padding are ignored: engines set them per call.
type fileJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    *component       `json:"normalizer"`
	PreTokenizer  *component       `json:"pre_tokenizer"`
	PostProcessor *component       `json:"post_processor"`
	Model         *modelJSON       `json:"model"`
}

type addedTokenJSON struct {
	ID         uint32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type modelJSON struct {
	Type                    string            `json:"type"`
	Vocab                   map[string]uint32 `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
	UnkToken                *string           `json:"unk_token"`
	ByteFallback            bool              `json:"byte_fallback"`
	FuseUnk                 bool              `json:"fuse_unk"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	Dropout                 *float64          `json:"dropout"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
}

// component is any normalizer, pre-tokenizer or post-processor object:
// its "type" says which of the other fields matter.
type component struct {
	Type string `json:"type"`
	// Sequence members.
	Normalizers   []component `json:"normalizers"`
	Pretokenizers []component `json:"pretokenizers"`
	Processors    []component `json:"processors"`
	// Split and Replace.
	Pattern  *patternJSON `json:"pattern"`
	Behavior string       `json:"behavior"`
	Invert   bool         `json:"invert"`
	Content  string       `json:"content"`
	// Prepend.
	Prepend string `json:"prepend"`
	// ByteLevel.
	AddPrefixSpace *bool `json:"add_prefix_space"`
	UseRegex       *bool `json:"use_regex"`
	// TemplateProcessing.
	Single        []templateItem          `json:"single"`
	SpecialTokens map[string]specialToken `json:"special_tokens"`
	// RobertaProcessing and BertProcessing.
	Cls json.RawMessage `json:"cls"`
	Sep json.RawMessage `json:"sep"`
}

type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

type templateItem struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

type specialToken struct {
	IDs []uint32 `json:"ids"`
}

// unsupported returns an ErrUnsupported naming the component and its type.
func unsupported(what, typ string) error {
	return fmt.Errorf("%w %s %s", ErrUnsupported, what, typ)
}

// invalid returns an ErrInvalid with a reason.
func invalid(reason string) error {
	return fmt.Errorf("%w: %s", ErrInvalid, reason)
}

// LoadFile reads a tokenizer.json from path; see Load.
func LoadFile(path string, opts Options) (*BPE, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load %s: %w", path, err)
	}
	return Load(data, opts)
}

// Load parses a Hugging Face tokenizer.json. It returns an error wrapping
// ErrUnsupported for components it cannot reproduce exactly (for example
// "tokenizer: unsupported pre_tokenizer Metaspace") and one wrapping
// ErrInvalid for malformed files. It never panics on any input.
func Load(data []byte, opts Options) (*BPE, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if f.Model == nil {
		return nil, invalid("no model")
	}
	if f.Model.Type != "BPE" && !(f.Model.Type == "" && f.Model.Merges != nil) {
		return nil, unsupported("model", f.Model.Type)
	}
	norm, err := parseNormalizer(f.Normalizer)
	if err != nil {
		return nil, err
	}
	pre, err := parsePreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	post, err := parsePostProcessor(f.PostProcessor)
	if err != nil {
		return nil, err
	}
	model, decode, err := buildModel(f.Model, pre.byteLevel)
	if err != nil {
		return nil, err
	}
	if !pre.byteLevel && pre.pattern == patternNone && metaspaceCuttable(model, decode) {
		pre.pattern = patternMetaspace
	}
	t := &BPE{model: model, norm: norm, pre: pre, post: post, decode: decode, chat: opts.ChatTemplate}
	if err := t.addTokens(f.AddedTokens, len(norm) > 0); err != nil {
		return nil, err
	}
	size := opts.CacheSize
	if size == 0 {
		size = DefaultCacheSize
	}
	t.cache = newWordCache(size)
	t.segments, t.segSeed = opts.Segments, maphash.Comparable(maphash.MakeSeed(), 0)
	return t, nil
}

// addTokens registers the added tokens: their matchers and decode strings.
// Tokens marked normalized are matched in normalized text when there is a
// normalizer, as the tokenizers library does.
func (t *BPE) addTokens(toks []addedTokenJSON, hasNorm bool) error {
	var raw, normed []addedToken
	for _, a := range toks {
		if a.SingleWord {
			return unsupported("added token", "with single_word ("+a.Content+")")
		}
		if a.Content == "" {
			return invalid(fmt.Sprintf("added token %d has empty content", a.ID))
		}
		tok := addedToken{content: a.Content, id: a.ID, lstrip: a.LStrip, rstrip: a.RStrip}
		if a.Normalized && hasNorm {
			tok.content = t.norm.apply(a.Content)
			normed = append(normed, tok)
		} else {
			raw = append(raw, tok)
		}
		if int(a.ID) >= maxVocab {
			return invalid(fmt.Sprintf("added token id %d too large", a.ID))
		}
		for int(a.ID) >= len(t.decode) {
			t.decode = append(t.decode, "")
		}
		t.decode[a.ID] = a.Content
	}
	t.added = newAddedMatcher(raw)
	t.addedNorm = newAddedMatcher(normed)
	return nil
}

// maxVocab bounds token ids, so that a hostile file cannot make the
// loader allocate a huge decode table.
const maxVocab = 1 << 21

// parsePreTokenizer turns tokenizer.json's pre_tokenizer into a split
// pattern and the byte-level flags.
func parsePreTokenizer(c *component) (preTokenizer, error) {
	var p preTokenizer
	if c == nil {
		return p, nil
	}
	var items []component
	if c.Type == "Sequence" {
		items = c.Pretokenizers
	} else {
		items = []component{*c}
	}
	for _, it := range items {
		var pat splitPattern
		switch it.Type {
		case "ByteLevel":
			if p.byteLevel {
				return p, unsupported("pre_tokenizer", "with two ByteLevel steps")
			}
			p.byteLevel = true
			p.addPrefixSpace = it.AddPrefixSpace == nil || *it.AddPrefixSpace
			if it.UseRegex == nil || *it.UseRegex {
				pat = patternGPT2
			}
		case "Split":
			if it.Pattern == nil || it.Pattern.Regex == nil {
				return p, unsupported("pre_tokenizer", "Split without a Regex pattern")
			}
			if it.Behavior != "Isolated" || it.Invert {
				return p, unsupported("pre_tokenizer", fmt.Sprintf("Split with behavior %s invert %v", it.Behavior, it.Invert))
			}
			var ok bool
			if pat, ok = patternFor(*it.Pattern.Regex); !ok {
				return p, unsupported("pre_tokenizer", "Split regex "+shorten(*it.Pattern.Regex))
			}
		default:
			return p, unsupported("pre_tokenizer", it.Type)
		}
		if pat != patternNone {
			if p.pattern != patternNone {
				return p, unsupported("pre_tokenizer", "with two split patterns")
			}
			p.pattern = pat
		}
	}
	return p, nil
}

// shorten trims a long pattern for an error message.
func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// buildModel builds the BPE model and the id-to-text table for decoding.
// For byte-level models vocabulary entries are decoded to raw bytes.
func buildModel(mj *modelJSON, byteLevel bool) (*bpeModel, []string, error) {
	if mj.Dropout != nil && *mj.Dropout > 0 {
		return nil, nil, unsupported("model", "BPE with dropout")
	}
	if (mj.ContinuingSubwordPrefix != nil && *mj.ContinuingSubwordPrefix != "") || (mj.EndOfWordSuffix != nil && *mj.EndOfWordSuffix != "") {
		return nil, nil, unsupported("model", "BPE with subword prefix or suffix")
	}
	if len(mj.Vocab) == 0 {
		return nil, nil, invalid("empty vocab")
	}
	m := &bpeModel{
		vocab:        make(map[string]uint32, len(mj.Vocab)),
		merges:       make(map[uint64]merge, len(mj.Merges)),
		byteLevel:    byteLevel,
		byteFallback: mj.ByteFallback,
		fuseUnk:      mj.FuseUnk,
		ignoreMerges: mj.IgnoreMerges,
	}
	maxID := uint32(0)
	for tok, id := range mj.Vocab {
		if id >= maxVocab {
			return nil, nil, invalid(fmt.Sprintf("token id %d too large", id))
		}
		maxID = max(maxID, id)
		key := tok
		if byteLevel {
			var ok bool
			if key, ok = byteLevelDecode(tok); !ok {
				continue // Only added tokens lie outside the byte alphabet.
			}
		}
		m.vocab[key] = id
	}
	decode := make([]string, maxID+1)
	for key, id := range m.vocab {
		decode[id] = key
		if byteLevel && len(key) == 1 {
			m.byteIDs[key[0]], m.hasByte[key[0]] = id, true
		}
	}
	if !byteLevel && m.byteFallback {
		for b := 0; b < 256; b++ {
			if id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
				m.byteIDs[b], m.hasByte[b] = id, true
			}
		}
	}
	if mj.UnkToken != nil {
		id, ok := mj.Vocab[*mj.UnkToken]
		if !ok {
			return nil, nil, invalid("unk_token " + *mj.UnkToken + " not in vocab")
		}
		m.unk, m.hasUnk = id, true
	}
	for rank, raw := range mj.Merges {
		a, b, err := parseMerge(raw)
		if err != nil {
			return nil, nil, err
		}
		if byteLevel {
			var okA, okB bool
			a, okA = byteLevelDecode(a)
			b, okB = byteLevelDecode(b)
			if !okA || !okB {
				return nil, nil, invalid(fmt.Sprintf("merge %d is outside the byte-level alphabet", rank))
			}
		}
		ida, okA := m.vocab[a]
		idb, okB := m.vocab[b]
		idm, okM := m.vocab[a+b]
		if !okA || !okB || !okM {
			return nil, nil, invalid(fmt.Sprintf("merge %d (%q %q) uses a token not in vocab", rank, a, b))
		}
		m.merges[pairKey(ida, idb)] = merge{rank: uint32(rank), id: idm}
	}
	return m, decode, nil
}

// metaspaceCuttable reports whether SentencePiece-normalized text may be
// cut before each "▁" that follows another character without changing the
// BPE result: "▁" is a token of its own and no merge builds a token with a
// "▁" after another character (true of Llama-2's and Mistral's vocabularies,
// whose tokens all match ▁*[^▁]*).
func metaspaceCuttable(m *bpeModel, decode []string) bool {
	if _, ok := m.vocab[metaspace]; !ok {
		return false
	}
	for _, mg := range m.merges {
		tok := strings.TrimLeft(decode[mg.id], metaspace)
		if strings.Contains(tok, metaspace) {
			return false
		}
	}
	return true
}

// parseMerge decodes one merge rule, either "a b" or ["a", "b"].
func parseMerge(raw json.RawMessage) (string, string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		parts := strings.Split(s, " ")
		if len(parts) != 2 {
			return "", "", invalid(fmt.Sprintf("merge %q is not two tokens", s))
		}
		return parts[0], parts[1], nil
	}
	var pair []string
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
		return "", "", invalid("merge " + shorten(string(raw)) + " is neither \"a b\" nor [a, b]")
	}
	return pair[0], pair[1], nil
}
