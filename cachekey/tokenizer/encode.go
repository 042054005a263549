package tokenizer

import (
	"context"
	"strings"
)

// DefaultCacheSize is the number of word-cache slots of a BPE loaded with
// Options.CacheSize zero: 16384 slots, a few hundred kilobytes when full.
const DefaultCacheSize = 1 << 14

// Options configure Load.
type Options struct {
	// ChatTemplate renders messages for EncodeChat; nil makes EncodeChat
	// return ErrNoChatTemplate.
	ChatTemplate ChatTemplate
	// CacheSize is the number of slots of the word cache; zero means
	// DefaultCacheSize and a negative value disables the cache.
	CacheSize int
	// Segments, when not nil, caches the ids of whole segments: the runs
	// of text between two added tokens (for a chat, about one message
	// each), of at least MinCachedSegment bytes. Encoding is a pure
	// function of each segment, so a conversation's next turn encodes
	// only its new messages. Several tokenizers may share one cache.
	Segments *TokenCache
}

// MinCachedSegment is the shortest segment, in bytes, that goes through
// Options.Segments: shorter ones (a role name, a newline) encode faster
// through the word cache than a hash lookup.
const MinCachedSegment = 128

// preTokenizer is the supported pre-tokenizer: a split pattern, then the
// byte-level mapping with an optional leading space.
type preTokenizer struct {
	pattern        splitPattern
	byteLevel      bool
	addPrefixSpace bool
}

// BPE is the in-process tokenizer for a Hugging Face tokenizer.json with a
// BPE model. It is immutable after Load apart from its word cache, and safe
// for concurrent use.
type BPE struct {
	model     *bpeModel
	norm      normalizer
	pre       preTokenizer
	post      postProcessor
	added     *addedMatcher
	addedNorm *addedMatcher
	cache     *wordCache
	segments  *TokenCache
	segSeed   uint64 // keys this tokenizer's segments in a shared cache
	chat      ChatTemplate
	// decode maps ids to their raw text: bytes for byte-level vocabulary,
	// the token string otherwise, and the content of added tokens.
	decode []string
}

var _ Tokenizer = (*BPE)(nil)

// Encode implements Tokenizer. It never blocks and ignores ctx.
func (t *BPE) Encode(_ context.Context, text string, addSpecial bool, dst []uint32) ([]uint32, error) {
	return t.EncodeString(text, addSpecial, dst), nil
}

// EncodeChat implements Tokenizer with the configured ChatTemplate.
func (t *BPE) EncodeChat(_ context.Context, messages []Message, dst []uint32) ([]uint32, error) {
	if t.chat == nil {
		return dst, ErrNoChatTemplate
	}
	text, err := t.chat.Render(messages, true)
	if err != nil {
		return dst, err
	}
	return t.EncodeString(text, false, dst), nil
}

// EncodeString appends the ids of text to dst, as the tokenizers library's
// encode(text, add_special_tokens=addSpecial) does, and returns dst.
func (t *BPE) EncodeString(text string, addSpecial bool, dst []uint32) []uint32 {
	if addSpecial {
		dst = append(dst, t.post.prefix...)
	}
	for i := 0; i < len(text); {
		start, end, id, ok := t.added.find(text, i)
		if !ok {
			start, end = len(text), len(text)
		}
		if start > i {
			dst = t.encodeSegment(text[i:start], dst)
		}
		if ok {
			dst = append(dst, id)
		}
		i = end
	}
	if addSpecial {
		dst = append(dst, t.post.suffix...)
	}
	return dst
}

// encodeSegment encodes raw text that holds no raw-matched added token,
// through the segment cache when there is one.
func (t *BPE) encodeSegment(seg string, dst []uint32) []uint32 {
	if t.segments == nil || len(seg) < MinCachedSegment {
		return t.encodeSegmentUncached(seg, dst)
	}
	k := KeyOf(t.segSeed, seg)
	start := len(dst)
	if dst, ok := t.segments.Get(k, dst); ok {
		return dst
	}
	dst = t.encodeSegmentUncached(seg, dst)
	t.segments.Put(k, dst[start:])
	return dst
}

// encodeSegmentUncached normalizes a segment, splits out the added tokens
// matched in normalized text, and encodes the rest piece by piece.
func (t *BPE) encodeSegmentUncached(seg string, dst []uint32) []uint32 {
	seg = t.norm.apply(seg)
	for i := 0; i < len(seg); {
		start, end, id, ok := t.addedNorm.find(seg, i)
		if !ok {
			start, end = len(seg), len(seg)
		}
		if start > i {
			dst = t.encodeNormalized(seg[i:start], dst)
		}
		if ok {
			dst = append(dst, id)
		}
		i = end
	}
	return dst
}

// encodeNormalized pre-tokenizes normalized text and BPE-encodes each
// piece, through the word cache.
func (t *BPE) encodeNormalized(s string, dst []uint32) []uint32 {
	if t.pre.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	for i := 0; i < len(s); {
		end := len(s)
		if t.pre.pattern != patternNone {
			end = t.pre.pattern.next(s, i)
		}
		dst = t.encodePieceCached(s[i:end], dst)
		i = end
	}
	return dst
}

// encodePieceCached encodes one piece, using and filling the word cache.
func (t *BPE) encodePieceCached(piece string, dst []uint32) []uint32 {
	if ids, ok := t.cache.get(piece); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = t.model.encodePiece(piece, dst)
	t.cache.put(piece, dst[start:])
	return dst
}

// Decode returns the text of ids: the concatenated bytes of byte-level
// tokens and the content of added tokens. For SentencePiece-style models it
// applies the usual decoder (▁ to space, <0xXX> byte fallback, and one
// leading space stripped). Unknown ids are skipped.
func (t *BPE) Decode(ids []uint32) string {
	var b strings.Builder
	for _, id := range ids {
		if int(id) >= len(t.decode) {
			continue
		}
		s := t.decode[id]
		if !t.model.byteLevel && t.model.byteFallback && len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>' {
			if v, ok := hexByte(s[3:5]); ok {
				b.WriteByte(v)
				continue
			}
		}
		b.WriteString(s)
	}
	out := b.String()
	if !t.model.byteLevel {
		out = strings.ReplaceAll(out, "\u2581", " ")
		out = strings.TrimPrefix(out, " ")
	}
	return out
}

// hexByte parses two upper-case hex digits.
func hexByte(s string) (byte, bool) {
	var v byte
	for i := 0; i < 2; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}

// VocabSize returns one more than the largest token id, added tokens
// included.
func (t *BPE) VocabSize() int { return len(t.decode) }
