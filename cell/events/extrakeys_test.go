package events

import (
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

func str(s string) ExtraKey   { return ExtraKey{Kind: KeyString, Text: s} }
func num(n int64) ExtraKey    { return ExtraKey{Kind: KeyInt, Int: n} }
func other(s string) ExtraKey { return ExtraKey{Kind: KeyOther, Text: s} }

func TestBlockIdentity(t *testing.T) {
	tests := []struct {
		name     string
		keys     BlockKeys
		first    bool
		lora     string
		loraID   int64
		wantSalt string
		wantOK   bool
	}{
		{"none", nil, true, "", 0, "", true},
		{"empty tuple", BlockKeys{}, false, "", 0, "", true},
		{"salt on the first block", BlockKeys{str("s")}, true, "", 0, "s", true},
		{"adapter then salt", BlockKeys{str("ad"), str("s")}, true, "ad", 0, "s", true},
		{"adapter alone", BlockKeys{str("ad")}, false, "ad", 0, "", true},
		{"adapter alone on the first block", BlockKeys{str("ad")}, true, "ad", 0, "", true},
		{"numeric adapter id (older vLLM)", BlockKeys{num(3)}, false, "lora_id:3", 3, "", true},
		{"numeric adapter id then salt", BlockKeys{num(3), str("s")}, true, "lora_id:3", 3, "s", true},
		{"string on a later block", BlockKeys{str("mmhash")}, false, "", 0, "", false},
		{"multimodal pair", BlockKeys{other(`["img",0]`)}, false, "", 0, "", false},
		{"multimodal pair then salt on the first block", BlockKeys{other(`["img",0]`), str("s")}, true, "", 0, "", false},
		{"adapter, multimodal", BlockKeys{str("ad"), other(`["img",4]`)}, false, "ad", 0, "", false},
		{"prompt-embeddings digest", BlockKeys{other("0xab")}, true, "", 0, "", false},
		{"another adapter's name", BlockKeys{str("other"), str("s")}, true, "ad", 0, "", false},
		{"integer that is not the adapter", BlockKeys{num(4)}, false, "lora_id:3", 3, "", false},
		{"two strings", BlockKeys{str("a"), str("b")}, true, "", 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			salt, ok := blockIdentity(tt.keys, tt.first, tt.lora, tt.loraID)
			if salt != tt.wantSalt || ok != tt.wantOK {
				t.Errorf("got (%q, %v), want (%q, %v)", salt, ok, tt.wantSalt, tt.wantOK)
			}
		})
	}
}

// TestApplierExtraKeys feeds BlockStored events with the extra keys vLLM
// sends, then a child event extending the chain, and checks the depth a
// request with a given identity finds.
func TestApplierExtraKeys(t *testing.T) {
	const bs = 4
	tokens := toks(100, 4*bs)
	more := toks(500, bs)
	type ident struct{ model, lora, salt string }
	none := []BlockKeys{nil, nil, nil, nil}
	adapter := []BlockKeys{{str("ad")}, {str("ad")}, {str("ad")}, {str("ad")}}
	tests := []struct {
		name        string
		lora        string
		keys        []BlockKeys
		query       ident
		wantDepth   int // of the first event's 4 blocks
		wantDropped uint64
	}{
		{"vLLM 0.26: one nil entry per block", "", none, ident{"m", "", ""}, 4, 0},
		{"cache salt on the first block", "", []BlockKeys{{str("tenant-a")}, nil, nil, nil}, ident{"m", "", "tenant-a"}, 4, 0},
		{"salted blocks do not match an unsalted request", "", []BlockKeys{{str("tenant-a")}, nil, nil, nil}, ident{"m", "", ""}, 0, 0},
		{"adapter on every block", "ad", adapter, ident{"m", "ad", ""}, 4, 0},
		{"adapter blocks match a request naming the adapter as its model", "ad", adapter, ident{"ad", "", ""}, 4, 0},
		{"adapter blocks do not match the base model", "ad", adapter, ident{"m", "", ""}, 0, 0},
		{"image in the third block: the first two are indexed", "", []BlockKeys{nil, nil, {other(`["img",1]`)}, nil}, ident{"m", "", ""}, 2, 1},
		{"image in the first block: nothing is indexed", "", []BlockKeys{{other(`["img",0]`)}, nil, nil, nil}, ident{"m", "", ""}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newTestIndex(t)
			a := newTestApplier(t, ix, bs)
			ev := stored(nil, tokens, bs, 0)
			ev.LoRAName, ev.ExtraKeys = tt.lora, tt.keys
			if err := apply(t, a, &Batch{Pod: "p", Model: "m", DPRank: -1, Events: []Event{ev}}); err != nil {
				t.Fatal(err)
			}
			seed := blockhash.Seed(blockhash.Identity(tt.query.model, tt.query.lora, tt.query.salt))
			h := blockhash.Hasher{BlockSize: bs}
			if got := depth(t, ix, "p", h.Chain(seed, tokens, nil)); got != tt.wantDepth {
				t.Errorf("got depth %d, want %d", got, tt.wantDepth)
			}
			if got := a.Counters().EventsDropped[ReasonExtraKeys].Load(); got != tt.wantDropped {
				t.Errorf("got %d events with unmapped keys, want %d", got, tt.wantDropped)
			}
			// A child event (no extra keys of its own) extends the chain
			// only where the chain is indexed.
			child := stored(tokens, more, bs, ev.BlockHashes[len(ev.BlockHashes)-1])
			if tt.lora != "" {
				child.LoRAName, child.ExtraKeys = tt.lora, []BlockKeys{{str(tt.lora)}}
			}
			if err := apply(t, a, &Batch{Pod: "p", Model: "m", DPRank: -1, Seq: 1, Events: []Event{child}}); err != nil {
				t.Fatal(err)
			}
			want := tt.wantDepth
			if want == 4 {
				want = 5
			}
			all := append(append([]uint32(nil), tokens...), more...)
			if got := depth(t, ix, "p", h.Chain(seed, all, nil)); got != want {
				t.Errorf("after a child event: got depth %d, want %d", got, want)
			}
		})
	}
}
