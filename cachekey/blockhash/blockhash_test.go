package blockhash

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// randTokens returns n random token ids, drawn from a vocabulary of vocab ids.
func randTokens(r *rand.Rand, n int, vocab uint32) []Token {
	out := make([]Token, n)
	for i := range out {
		out[i] = r.Uint32N(vocab)
	}
	return out
}

// seqTokens returns the tokens start, start+1, ..., start+n-1.
func seqTokens(start, n int) []Token {
	out := make([]Token, n)
	for i := range out {
		out[i] = Token(start + i)
	}
	return out
}

// mustHasher returns NewHasher(bs) or fails the test.
func mustHasher(t testing.TB, bs int) Hasher {
	t.Helper()
	h, err := NewHasher(bs)
	if err != nil {
		t.Fatalf("NewHasher(%d): %v", bs, err)
	}
	return h
}

func TestNewHasherValidates(t *testing.T) {
	tests := []struct {
		bs     int
		wantOK bool
	}{
		{-1, false}, {0, false}, {1, true}, {16, true}, {512, true},
		{MaxBlockSize, true}, {MaxBlockSize + 1, false},
	}
	for _, tt := range tests {
		h, err := NewHasher(tt.bs)
		if gotOK := err == nil; gotOK != tt.wantOK {
			t.Errorf("NewHasher(%d): got err %v, want ok %v", tt.bs, err, tt.wantOK)
		}
		if err == nil && h.BlockSize != tt.bs {
			t.Errorf("NewHasher(%d).BlockSize: got %d want %d", tt.bs, h.BlockSize, tt.bs)
		}
	}
	if got, want := DefaultHasher().BlockSize, DefaultBlockSize; got != want {
		t.Errorf("DefaultHasher().BlockSize: got %d want %d", got, want)
	}
}

func TestInvalidHasherPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("Chain on zero Hasher: got no panic, want one")
		}
	}()
	var h Hasher
	h.Chain(Seed(Keys{}), seqTokens(0, 32), nil)
}

func TestNumBlocksAndPartialTail(t *testing.T) {
	seed := Seed(Keys{Model: "m"})
	for _, bs := range []int{1, 3, 16, 512} {
		h := mustHasher(t, bs)
		for _, n := range []int{0, 1, bs - 1, bs, bs + 1, 2*bs - 1, 2 * bs, 5*bs + 2} {
			want := n / bs
			if got := h.NumBlocks(n); got != want {
				t.Errorf("bs=%d NumBlocks(%d): got %d want %d", bs, n, got, want)
			}
			toks := seqTokens(7, n)
			got := h.Chain(seed, toks, nil)
			if len(got) != want {
				t.Errorf("bs=%d len(Chain(%d tokens)): got %d want %d", bs, n, len(got), want)
			}
			// The tail beyond the last full block does not affect any hash.
			aligned := h.Chain(seed, toks[:want*bs], nil)
			if !slices.Equal(got, aligned) {
				t.Errorf("bs=%d n=%d: partial tail changed the hashes: got %v want %v", bs, n, got, aligned)
			}
			if n > want*bs {
				toks[n-1]++
				if again := h.Chain(seed, toks, nil); !slices.Equal(again, got) {
					t.Errorf("bs=%d n=%d: changing a tail token changed the hashes", bs, n)
				}
			}
		}
	}
	if got := mustHasher(t, 16).NumBlocks(-5); got != 0 {
		t.Errorf("NumBlocks(-5): got %d want 0", got)
	}
}

func TestDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	toks := randTokens(r, 1000, 1<<17)
	h := mustHasher(t, 16)
	k := Keys{Model: "llama", LoRA: "a", MultimodalIDs: []string{"img"}}
	a := h.Chain(Seed(k), toks, nil)
	b := h.Chain(Seed(k), slices.Clone(toks), make([]Hash, 0, 100))
	if !slices.Equal(a, b) {
		t.Fatalf("Chain not deterministic: got %v then %v", a, b)
	}
}

func TestChainAppendsToDst(t *testing.T) {
	h := mustHasher(t, 4)
	seed := Seed(Keys{})
	prefix := []Hash{11, 22}
	got := h.Chain(seed, seqTokens(0, 8), prefix)
	want := append([]Hash{11, 22}, h.Chain(seed, seqTokens(0, 8), nil)...)
	if !slices.Equal(got, want) {
		t.Errorf("Chain into non-empty dst: got %v want %v", got, want)
	}
}

func TestPrefixProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, bs := range []int{1, 16, 64} {
		h := mustHasher(t, bs)
		seed := Seed(Keys{Model: "m", CacheSalt: "tenant"})
		toks := randTokens(r, 20*bs+5, 50000)
		long := h.Chain(seed, toks, nil)
		for _, n := range []int{0, 1, bs, 3*bs + 1, 10 * bs, len(toks)} {
			short := h.Chain(seed, toks[:n], nil)
			if !slices.Equal(long[:len(short)], short) {
				t.Errorf("bs=%d: Chain of %d tokens is not a prefix of Chain of %d tokens", bs, n, len(toks))
			}
		}
		// A change in block j changes hash j and every later hash, none before.
		j := 7
		mod := slices.Clone(toks)
		mod[j*bs]++
		other := h.Chain(seed, mod, nil)
		for i := range long {
			if same := long[i] == other[i]; same != (i < j) {
				t.Errorf("bs=%d: token change in block %d: hash %d equal=%v, want %v", bs, j, i, same, i < j)
			}
		}
	}
}

func TestExtendContinuesChain(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, bs := range []int{1, 16, 512} {
		h := mustHasher(t, bs)
		seed := Seed(Keys{Model: "m"})
		for _, nb := range []int{1, 2, 5} {
			a := randTokens(r, nb*bs, 1<<20)
			b := randTokens(r, 3*bs+bs/2, 1<<20)
			ca := h.Chain(seed, a, nil)
			whole := h.Chain(seed, append(slices.Clone(a), b...), nil)
			got := h.Extend(ca[len(ca)-1], b, nil)
			if want := whole[len(ca):]; !slices.Equal(got, want) {
				t.Errorf("bs=%d nb=%d: Extend: got %v want %v", bs, nb, got, want)
			}
		}
		// Extend from the seed is Chain.
		toks := randTokens(r, 4*bs, 100)
		if got, want := h.Extend(seed, toks, nil), h.Chain(seed, toks, nil); !slices.Equal(got, want) {
			t.Errorf("bs=%d: Extend(seed) != Chain(seed): got %v want %v", bs, got, want)
		}
	}
}

func TestMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		bs := 1 + r.IntN(70)
		if trial%50 == 0 {
			bs = 512
		}
		h := mustHasher(t, bs)
		k := randKeys(r)
		seed := Seed(k)
		if want := refSeed(k); uint64(seed) != want {
			t.Fatalf("trial %d: Seed(%+v): got %#x want %#x", trial, k, seed, want)
		}
		toks := randTokens(r, r.IntN(6*bs+3), 1<<31)
		got := h.Chain(seed, toks, nil)
		want := refChain(bs, uint64(seed), toks)
		if len(got) != len(want) {
			t.Fatalf("trial %d: len: got %d want %d", trial, len(got), len(want))
		}
		for i := range got {
			if uint64(got[i]) != want[i] {
				t.Fatalf("trial %d bs=%d block %d: got %#x want %#x", trial, bs, i, got[i], want[i])
			}
			if got[i] == 0 {
				t.Fatalf("trial %d block %d: got the reserved zero Hash", trial, i)
			}
		}
	}
}

func TestChunkHashPortableMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 2, 3, 4, 15, 16, 63, 64, 65, 200, 512, 1000, 4096} {
		toks := randTokens(r, n, 1<<32-1)
		want := refChunk(toks)
		if got := ChunkHash(toks); got != want {
			t.Errorf("ChunkHash(%d tokens): got %#x want %#x", n, got, want)
		}
		if got := chunkHashPortable(toks); got != want {
			t.Errorf("chunkHashPortable(%d tokens): got %#x want %#x", n, got, want)
		}
	}
}

// TestKnownValues pins a few outputs so that an accidental change of the
// encoding (which would silently make processes of different versions
// disagree on every hash) fails loudly. If the encoding is changed on
// purpose, bump seedDomain's version and update these values.
func TestKnownValues(t *testing.T) {
	chain := mustHasher(t, 4).Chain(Seed(Keys{Model: "m"}), seqTokens(1, 9), nil)
	if len(chain) != 2 {
		t.Fatalf("len(Chain): got %d want 2", len(chain))
	}
	tests := []struct {
		name      string
		got, want uint64
	}{
		{"Seed(Keys{})", uint64(Seed(Keys{})), 0x83d1cd925e63f740},
		{"Seed(Model m)", uint64(Seed(Keys{Model: "m"})), 0x728e2d186bd8b574},
		{"ChunkHash(1,2,3,4)", ChunkHash([]Token{1, 2, 3, 4}), 0x6fc1ebd4f4d6ea31},
		{"Chain block 0", uint64(chain[0]), 0xba274214329223fc},
		{"Chain block 1", uint64(chain[1]), 0x92690774f35c98b7},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %#x want %#x", tt.name, tt.got, tt.want)
		}
	}
}

func TestNonZero(t *testing.T) {
	tests := []struct {
		in   uint64
		repl Hash
		want Hash
	}{
		{0, MixZero, MixZero},
		{0, SeedZero, SeedZero},
		{1, MixZero, 1},
		{^uint64(0), SeedZero, Hash(^uint64(0))},
	}
	for _, tt := range tests {
		if got := nonZero(tt.in, tt.repl); got != tt.want {
			t.Errorf("nonZero(%#x, %#x): got %#x want %#x", tt.in, tt.repl, got, tt.want)
		}
	}
	if MixZero == 0 || SeedZero == 0 || MixZero == SeedZero {
		t.Errorf("MixZero %#x and SeedZero %#x must be nonzero and distinct", MixZero, SeedZero)
	}
	r := rand.New(rand.NewPCG(11, 12))
	for range 10000 {
		if got := Mix(Hash(r.Uint64()), r.Uint64()); got == 0 {
			t.Fatalf("Mix: got the reserved zero Hash")
		}
	}
	if got := Mix(0, 0); got == 0 {
		t.Errorf("Mix(0, 0): got the reserved zero Hash")
	}
}

func TestMixSensitivity(t *testing.T) {
	// Flipping any single input bit of Mix changes the output (a weak
	// avalanche check: about half the bits should flip on average).
	r := rand.New(rand.NewPCG(13, 14))
	parent, chunk := Hash(r.Uint64()), r.Uint64()
	base := Mix(parent, chunk)
	total := 0
	for bit := range 64 {
		a := Mix(parent^Hash(1)<<bit, chunk)
		b := Mix(parent, chunk^uint64(1)<<bit)
		if a == base || b == base {
			t.Fatalf("flipping bit %d did not change Mix", bit)
		}
		total += popcount(uint64(a^base)) + popcount(uint64(b^base))
	}
	if avg := float64(total) / 128; avg < 24 || avg > 40 {
		t.Errorf("Mix avalanche: got %.1f flipped bits on average, want about 32", avg)
	}
}

// popcount counts set bits the slow, obvious way.
func popcount(x uint64) int {
	n := 0
	for ; x != 0; x >>= 1 {
		n += int(x & 1)
	}
	return n
}

func TestConcurrentUse(t *testing.T) {
	h := mustHasher(t, 16)
	seed := Seed(Keys{Model: "m"})
	toks := seqTokens(0, 16*64)
	want := h.Chain(seed, toks, nil)
	done := make(chan []Hash)
	for range 4 {
		go func() { done <- h.Chain(seed, toks, make([]Hash, 0, 64)) }()
	}
	for range 4 {
		if got := <-done; !slices.Equal(got, want) {
			t.Errorf("concurrent Chain: got %v want %v", got, want)
		}
	}
}

func TestChainZeroAlloc(t *testing.T) {
	h := mustHasher(t, 16)
	seed := Seed(Keys{Model: "m"})
	toks := seqTokens(0, 16*32+3)
	dst := make([]Hash, 0, 32)
	allocs := testing.AllocsPerRun(50, func() {
		dst = h.Chain(seed, toks, dst[:0])
	})
	if allocs != 0 {
		t.Errorf("Chain with capacity: got %v allocs per run, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(50, func() {
		_ = Seed(Keys{Model: "meta-llama/Llama-3.1-8B", LoRA: "x", MultimodalIDs: []string{"a", "b"}})
	})
	if allocs != 0 {
		t.Errorf("Seed with small keys: got %v allocs per run, want 0", allocs)
	}
}

func TestMixIsXXH3OfParentChunk(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	cases := [][2]uint64{{0, 0}, {1, 0}, {0, 1}, {^uint64(0), ^uint64(0)}}
	for range 5000 {
		cases = append(cases, [2]uint64{r.Uint64(), r.Uint64()})
	}
	for _, c := range cases {
		if got, want := uint64(Mix(Hash(c[0]), c[1])), refMix(c[0], c[1]); got != want {
			t.Fatalf("Mix(%#x, %#x): got %#x want %#x", c[0], c[1], got, want)
		}
	}
}
