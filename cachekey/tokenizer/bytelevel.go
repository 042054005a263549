package tokenizer

import (
	"strings"
)

// byteToRune is GPT-2's byte-to-unicode table used by the ByteLevel
// pre-tokenizer: printable Latin-1 bytes map to themselves and the others
// (control characters, space, and a few more) to U+0100 upwards, in byte
// order, so that every byte becomes a visible character.
var byteToRune [256]rune

// runeToByte is the inverse of byteToRune; entries are -1 for runes that are
// not in the table. Only runes below 0x144 can appear.
var runeToByte [0x144]int16

func init() {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = 256 + n
			n++
		}
	}
	for i := range runeToByte {
		runeToByte[i] = -1
	}
	for b, r := range byteToRune {
		runeToByte[r] = int16(b)
	}
}

// byteLevelDecode turns a vocabulary string of byte-level characters back
// into the raw bytes it stands for. It reports false if a character is not
// part of the byte-level alphabet.
func byteLevelDecode(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < 0 || int(r) >= len(runeToByte) || runeToByte[r] < 0 {
			return "", false
		}
		b.WriteByte(byte(runeToByte[r]))
	}
	return b.String(), true
}
