package blockhash

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// randKeys returns random Keys with short, often empty, often colliding
// fields, so that near-miss encodings are exercised.
func randKeys(r *rand.Rand) Keys {
	str := func() string {
		const alphabet = "ab\x00/"
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	k := Keys{Model: str(), LoRA: str(), CacheSalt: str(), RouteTemplate: str()}
	if n := r.IntN(4); n > 0 {
		k.MultimodalIDs = make([]string, n)
		for i := range k.MultimodalIDs {
			k.MultimodalIDs[i] = str()
		}
	}
	if r.IntN(2) == 0 {
		k.HasVirtualLayer = true
		k.VirtualLayer = r.Uint32N(4)
	}
	return k
}

func TestVirtualLayer(t *testing.T) {
	tests := []struct {
		step, nPhys, phys, want uint32
	}{
		{0, 12, 0, 0},
		{0, 12, 11, 11},
		{1, 12, 0, 12},
		{3, 12, 5, 41},
		{7, 1, 0, 7},
	}
	for _, tt := range tests {
		if got := VirtualLayer(tt.step, tt.nPhys, tt.phys); got != tt.want {
			t.Errorf("VirtualLayer(%d, %d, %d): got %d want %d", tt.step, tt.nPhys, tt.phys, got, tt.want)
		}
	}
	// Distinct (step, block) pairs with block < nPhys give distinct ids.
	seen := map[uint32]bool{}
	for step := range uint32(8) {
		for phys := range uint32(12) {
			v := VirtualLayer(step, 12, phys)
			if seen[v] {
				t.Fatalf("VirtualLayer(%d, 12, %d) = %d repeats an earlier id", step, phys, v)
			}
			seen[v] = true
		}
	}
}

// TestEveryKeyFieldChangesEveryHash checks that changing any one field of
// the keys changes the seed and every block hash of the chain.
func TestEveryKeyFieldChangesEveryHash(t *testing.T) {
	base := Keys{
		Model:           "meta-llama/Llama-3.1-8B",
		LoRA:            "sql-adapter",
		CacheSalt:       "tenant-1",
		MultimodalIDs:   []string{"img-1", "img-2"},
		RouteTemplate:   "route-a",
		VirtualLayer:    VirtualLayer(1, 12, 3),
		HasVirtualLayer: true,
	}
	tests := []struct {
		name   string
		change func(k *Keys)
	}{
		{"Model", func(k *Keys) { k.Model = "meta-llama/Llama-3.1-70B" }},
		{"Model empty", func(k *Keys) { k.Model = "" }},
		{"LoRA", func(k *Keys) { k.LoRA = "chat-adapter" }},
		{"LoRA none", func(k *Keys) { k.LoRA = "" }},
		{"CacheSalt", func(k *Keys) { k.CacheSalt = "tenant-2" }},
		{"CacheSalt none", func(k *Keys) { k.CacheSalt = "" }},
		{"MultimodalIDs one changed", func(k *Keys) { k.MultimodalIDs = []string{"img-1", "img-3"} }},
		{"MultimodalIDs reordered", func(k *Keys) { k.MultimodalIDs = []string{"img-2", "img-1"} }},
		{"MultimodalIDs fewer", func(k *Keys) { k.MultimodalIDs = []string{"img-1"} }},
		{"MultimodalIDs more", func(k *Keys) { k.MultimodalIDs = []string{"img-1", "img-2", ""} }},
		{"MultimodalIDs none", func(k *Keys) { k.MultimodalIDs = nil }},
		{"RouteTemplate", func(k *Keys) { k.RouteTemplate = "route-b" }},
		{"RouteTemplate none", func(k *Keys) { k.RouteTemplate = "" }},
		{"VirtualLayer", func(k *Keys) { k.VirtualLayer = VirtualLayer(1, 12, 4) }},
		{"VirtualLayer zero", func(k *Keys) { k.VirtualLayer = 0 }},
		{"HasVirtualLayer false", func(k *Keys) { k.HasVirtualLayer = false }},
	}
	h := mustHasher(t, 16)
	toks := seqTokens(100, 16*8)
	baseSeed := Seed(base)
	baseChain := h.Chain(baseSeed, toks, nil)
	seeds := map[Hash]string{baseSeed: "base"}
	for _, tt := range tests {
		k := base
		k.MultimodalIDs = append([]string(nil), base.MultimodalIDs...)
		tt.change(&k)
		seed := Seed(k)
		if prev, dup := seeds[seed]; dup {
			t.Errorf("%s: got the same seed as %s", tt.name, prev)
		}
		seeds[seed] = tt.name
		chain := h.Chain(seed, toks, nil)
		for i := range chain {
			if chain[i] == baseChain[i] {
				t.Errorf("%s: block %d hash unchanged (%#x)", tt.name, i, chain[i])
			}
		}
	}
}

// TestKeysAmbiguity checks that keys whose naive concatenations coincide
// still give different seeds, and that the documented equivalences hold.
func TestKeysAmbiguity(t *testing.T) {
	differ := []struct {
		name string
		a, b Keys
	}{
		{"Model/LoRA boundary", Keys{Model: "ab", LoRA: "c"}, Keys{Model: "a", LoRA: "bc"}},
		{"LoRA/CacheSalt boundary", Keys{LoRA: "ab", CacheSalt: "c"}, Keys{LoRA: "a", CacheSalt: "bc"}},
		{"field swap", Keys{Model: "x"}, Keys{LoRA: "x"}},
		{"salt vs route", Keys{CacheSalt: "x"}, Keys{RouteTemplate: "x"}},
		{"mm split", Keys{MultimodalIDs: []string{"ab", "c"}}, Keys{MultimodalIDs: []string{"a", "bc"}}},
		{"mm joined", Keys{MultimodalIDs: []string{"abc"}}, Keys{MultimodalIDs: []string{"a", "bc"}}},
		{"mm empty id vs none", Keys{MultimodalIDs: []string{""}}, Keys{}},
		{"mm two empty vs one", Keys{MultimodalIDs: []string{"", ""}}, Keys{MultimodalIDs: []string{""}}},
		{"mm vs model", Keys{MultimodalIDs: []string{"m"}}, Keys{Model: "m"}},
		{"mm vs route", Keys{MultimodalIDs: []string{"r"}}, Keys{RouteTemplate: "r"}},
		{"virtual layer 0 vs absent", Keys{HasVirtualLayer: true}, Keys{}},
		{"virtual layer 1 vs 0", Keys{HasVirtualLayer: true, VirtualLayer: 1}, Keys{HasVirtualLayer: true}},
		{"length prefix bytes in string", Keys{Model: "a\x01\x00\x00\x00\x00\x00\x00\x00b"}, Keys{Model: "a", LoRA: "b"}},
		{"nul inside", Keys{Model: "a\x00"}, Keys{Model: "a"}},
	}
	for _, tt := range differ {
		if Seed(tt.a) == Seed(tt.b) {
			t.Errorf("%s: Seed(%+v) == Seed(%+v), want different", tt.name, tt.a, tt.b)
		}
	}
	same := []struct {
		name string
		a, b Keys
	}{
		{"nil vs empty multimodal", Keys{Model: "m"}, Keys{Model: "m", MultimodalIDs: []string{}}},
		{"layer ignored when absent", Keys{VirtualLayer: 9}, Keys{}},
		{"zero keys", Keys{}, Keys{}},
	}
	for _, tt := range same {
		if Seed(tt.a) != Seed(tt.b) {
			t.Errorf("%s: Seed(%+v) != Seed(%+v), want equal", tt.name, tt.a, tt.b)
		}
	}
}

// TestSeedInjectiveOnRandomKeys draws many small random keys and checks that
// two keys share a seed only if they have the same canonical encoding, and
// that keys too large for the stack buffer still hash like the reference.
func TestSeedInjectiveOnRandomKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	byEnc := map[string]Hash{}
	bySeed := map[Hash]string{}
	for range 20000 {
		k := randKeys(r)
		enc := string(appendKeys(nil, &k))
		s := Seed(k)
		if s == 0 {
			t.Fatalf("Seed(%+v): got the reserved zero Hash", k)
		}
		if prev, ok := byEnc[enc]; ok && prev != s {
			t.Fatalf("Seed(%+v): same encoding, got %#x and %#x", k, prev, s)
		}
		if prev, ok := bySeed[s]; ok && prev != enc {
			t.Fatalf("Seed(%+v): different encodings share seed %#x", k, s)
		}
		byEnc[enc], bySeed[s] = s, enc
	}
	big := Keys{Model: strings.Repeat("m", 1000), MultimodalIDs: []string{strings.Repeat("i", 700)}}
	if got, want := uint64(Seed(big)), refSeed(big); got != want {
		t.Errorf("Seed(big keys): got %#x want %#x", got, want)
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name              string
		model, lora, salt string
		want              Keys
	}{
		{"base model", "m", "", "", Keys{Model: "m"}},
		{"salted", "m", "", "s", Keys{Model: "m", CacheSalt: "s"}},
		{"adapter stands for the model", "m", "ad", "", Keys{Model: "ad"}},
		{"adapter and salt", "m", "ad", "s", Keys{Model: "ad", CacheSalt: "s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Identity(tt.model, tt.lora, tt.salt)
			if Seed(got) != Seed(tt.want) || got.Model != tt.want.Model || got.LoRA != "" || got.CacheSalt != tt.want.CacheSalt {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	// A request naming an adapter as its model meets the engine's blocks
	// stored under the base model with that adapter.
	if Seed(Identity("ad", "", "")) != Seed(Identity("base", "ad", "")) {
		t.Error("request for adapter ad and blocks of base+ad have different seeds")
	}
}
