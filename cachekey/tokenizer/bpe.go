package tokenizer

import (
	"math"
	"unicode/utf8"
)

// noRank marks a pair of symbols that has no merge.
const noRank = math.MaxUint32

// merge is the result of merging a pair of symbols: the rank of the merge
// rule (its line in tokenizer.json's merges, lower merges first) and the id
// of the merged token.
type merge struct {
	rank uint32
	id   uint32
}

// pairKey packs a pair of token ids into a map key.
func pairKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

// bpeModel is the BPE model of a tokenizer.json: the vocabulary and the
// merge rules. It turns one pre-tokenized piece into token ids.
//
// For byte-level models the vocabulary is keyed by raw bytes (the
// byte-level characters of tokenizer.json decoded back), so pieces of the
// input are looked up without converting them; the initial symbols of a
// piece are its bytes. For SentencePiece-style models the initial symbols are
// the piece's characters, with byte fallback (<0x41>) or the unknown token
// for characters not in the vocabulary.
type bpeModel struct {
	vocab  map[string]uint32
	merges map[uint64]merge
	// byteLevel selects byte symbols instead of character symbols.
	byteLevel bool
	// byteIDs holds the ids of the single-byte tokens (byte-level) or of
	// the <0xXX> byte fallback tokens; hasByte says which exist.
	byteIDs [256]uint32
	hasByte [256]bool
	// byteFallback enables <0xXX> tokens for unknown characters.
	byteFallback bool
	// unk is the unknown token's id, if hasUnk; fuseUnk merges runs of it.
	unk     uint32
	hasUnk  bool
	fuseUnk bool
	// ignoreMerges emits a piece found whole in the vocabulary directly.
	ignoreMerges bool
}

// rank returns the merge of the pair (a, b), or noRank.
func (m *bpeModel) rank(a, b uint32) merge {
	if mg, ok := m.merges[pairKey(a, b)]; ok {
		return mg
	}
	return merge{rank: noRank}
}

// symbols appends the initial symbols of piece to dst.
func (m *bpeModel) symbols(piece string, dst []uint32) []uint32 {
	if m.byteLevel {
		for i := 0; i < len(piece); i++ {
			// A byte without a token is dropped, as the tokenizers library
			// does when there is neither byte fallback nor an unknown token.
			if b := piece[i]; m.hasByte[b] {
				dst = append(dst, m.byteIDs[b])
			} else if m.hasUnk {
				dst = m.appendUnk(dst)
			}
		}
		return dst
	}
	for i := 0; i < len(piece); {
		_, w := utf8.DecodeRuneInString(piece[i:])
		ch := piece[i : i+w]
		i += w
		if id, ok := m.vocab[ch]; ok {
			dst = append(dst, id)
			continue
		}
		if m.byteFallback && m.allBytes(ch) {
			for j := 0; j < len(ch); j++ {
				dst = append(dst, m.byteIDs[ch[j]])
			}
			continue
		}
		if m.hasUnk {
			dst = m.appendUnk(dst)
		}
	}
	return dst
}

// allBytes reports whether every byte of ch has a byte fallback token.
func (m *bpeModel) allBytes(ch string) bool {
	for j := 0; j < len(ch); j++ {
		if !m.hasByte[ch[j]] {
			return false
		}
	}
	return true
}

// appendUnk appends the unknown token, fusing it with a preceding one when
// fuseUnk is set.
func (m *bpeModel) appendUnk(dst []uint32) []uint32 {
	if m.fuseUnk && len(dst) > 0 && dst[len(dst)-1] == m.unk {
		return dst
	}
	return append(dst, m.unk)
}

// smallWord is the symbol count up to which mergeWord scans an array of
// pair ranks instead of using a heap; short pieces are the common case.
const smallWord = 48

// encodePiece appends the token ids of one pre-tokenized piece to dst.
func (m *bpeModel) encodePiece(piece string, dst []uint32) []uint32 {
	if m.ignoreMerges {
		if id, ok := m.vocab[piece]; ok {
			return append(dst, id)
		}
	}
	start := len(dst)
	dst = m.symbols(piece, dst)
	word := dst[start:]
	if len(word) <= smallWord {
		return dst[:start+mergeSmall(m, word)]
	}
	return dst[:start+mergeHeap(m, word)]
}

// mergeSmall merges the symbols of word in place, always merging the pair
// with the lowest rank (leftmost on ties), and returns the new length. It
// keeps the rank of every adjacent pair in an array, so each merge costs a
// scan of the array and two map lookups.
func mergeSmall(m *bpeModel, word []uint32) int {
	n := len(word)
	if n < 2 {
		return n
	}
	var pairs [smallWord]merge
	for i := 0; i < n-1; i++ {
		pairs[i] = m.rank(word[i], word[i+1])
	}
	for {
		best := -1
		bestRank := uint32(noRank)
		for i := 0; i < n-1; i++ {
			if pairs[i].rank < bestRank {
				best, bestRank = i, pairs[i].rank
			}
		}
		if best < 0 {
			return n
		}
		word[best] = pairs[best].id
		copy(word[best+1:n-1], word[best+2:n])
		copy(pairs[best:n-2], pairs[best+1:n-1])
		n--
		if best > 0 {
			pairs[best-1] = m.rank(word[best-1], word[best])
		}
		if best < n-1 {
			pairs[best] = m.rank(word[best], word[best+1])
		}
	}
}
