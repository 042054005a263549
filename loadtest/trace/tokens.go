package trace

// Vocab is the size of the synthetic vocabulary AppendTokens draws from,
// about that of current large models (128k).
const Vocab = 128_000

// AppendTokens appends the TokensPerID token ids that hash id id expands to
// and returns the extended slice. Token j of id h is a 64-bit mix of (h, j)
// reduced modulo Vocab: the expansion is a pure function, so the same id
// always gives the same tokens, different ids give different token blocks
// (up to chance), and a trace replayed twice hashes to the same blocks.
func AppendTokens(dst []uint32, id uint64) []uint32 {
	base := mix64(id ^ 0x6a09e667f3bcc909)
	for j := uint64(0); j < TokensPerID; j++ {
		dst = append(dst, uint32(mix64(base+j*0x9e3779b97f4a7c15)%Vocab))
	}
	return dst
}

// mix64 is the SplitMix64 finaliser: a bijection of uint64 with good
// avalanche, so nearby inputs give unrelated outputs.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
