package index

import "math/bits"

// A holder word is the compact value the index keeps per block: most blocks
// are held by one or a few pods, so up to seven slots live inline in the word
// and only popular blocks (a shared system prompt) pay for a full 32-byte
// HostBitmap in the shard's overflow array.
//
// Layout of a holder word (uint64):
//
//	bits 56..63  count n in 1..7: slots inline in bytes 0..n-1 (unordered)
//	             tagOverflow: bits 0..31 index the shard's overflow array
//	0            no holders (never stored: an empty block is deleted)
const (
	maxInline   = 7
	tagShift    = 56
	tagOverflow = 0xFF
)

func holderCount(w uint64) int { return int(w >> tagShift) }

func isOverflow(w uint64) bool { return w>>tagShift == tagOverflow }

func overflowRef(w uint64) uint32 { return uint32(w) }

func makeOverflow(ref uint32) uint64 { return tagOverflow<<tagShift | uint64(ref) }

// inlineBitmap decodes an inline holder word.
func inlineBitmap(w uint64) HostBitmap {
	var b HostBitmap
	n := holderCount(w)
	for i := 0; i < n; i++ {
		s := byte(w >> (8 * i))
		b[s>>6] |= 1 << (s & 63)
	}
	return b
}

// inlineHas reports whether the inline word w holds slot s.
func inlineHas(w uint64, s Slot) bool {
	n := holderCount(w)
	for i := 0; i < n; i++ {
		if Slot(w>>(8*i)) == s {
			return true
		}
	}
	return false
}

// inlineAdd returns w with s appended; the caller checks that s is absent and
// that the count is below maxInline.
func inlineAdd(w uint64, s Slot) uint64 {
	n := holderCount(w)
	low := w & (1<<tagShift - 1)
	low |= uint64(s) << (8 * n)
	return uint64(n+1)<<tagShift | low
}

// inlineRemove returns w without s (0 when it was the last holder); the caller
// checks that s is present. The last slot moves into the freed byte.
func inlineRemove(w uint64, s Slot) uint64 {
	n := holderCount(w)
	low := w & (1<<tagShift - 1)
	for i := 0; i < n; i++ {
		if Slot(low>>(8*i)) == s {
			last := (low >> (8 * (n - 1))) & 0xFF
			low &^= 0xFF << (8 * (n - 1))
			if i != n-1 {
				low &^= 0xFF << (8 * i)
				low |= last << (8 * i)
			}
			break
		}
	}
	if n == 1 {
		return 0
	}
	return uint64(n-1)<<tagShift | low
}

// inlineFromBitmap encodes b inline; the caller checks b.Count() <= maxInline.
func inlineFromBitmap(b HostBitmap) uint64 {
	var w uint64
	n := 0
	for i, x := range b {
		for x != 0 {
			t := bits.TrailingZeros64(x)
			w |= uint64(i*64+t) << (8 * n)
			n++
			x &= x - 1
		}
	}
	if n == 0 {
		return 0
	}
	return uint64(n)<<tagShift | w
}
