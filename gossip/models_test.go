package gossip

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestModelSet(t *testing.T) {
	s := NewModelSet("llama", "qwen", "llama", "lora-a")
	if s.Len() != 3 || !s.valid() {
		t.Fatalf("NewModelSet: %d models, valid %v; want 3, valid", s.Len(), s.valid())
	}
	for name, want := range map[string]bool{"llama": true, "qwen": true, "lora-a": true, "mistral": false, "": false} {
		if got := s.Has(name); got != want {
			t.Errorf("Has(%q) = %v, want %v", name, got, want)
		}
	}
	if NewModelSet().Len() != 0 || NewModelSet().Has("x") {
		t.Error("the empty set holds something")
	}
}

func TestMetaModelsRoundTrip(t *testing.T) {
	base := NodeMeta{Role: RoleCell, CellID: "c1", HTTPAddr: "10.0.0.5:8080", GRPCAddr: "10.0.0.5:9090"}
	withModels := base
	withModels.ModelsKnown, withModels.Models = true, NewModelSet("a", "b", "c")
	knownNone := base
	knownNone.ModelsKnown = true
	for _, m := range []NodeMeta{base, withModels, knownNone} {
		got, err := DecodeMeta(EncodeMeta(m))
		if err != nil || got != m {
			t.Errorf("round trip of %+v: got %+v, %v", m, got, err)
		}
	}
	// Metadata of a node without the models section (an earlier version)
	// decodes with unknown models.
	old := EncodeMeta(base)
	if got, err := DecodeMeta(old); err != nil || got.ModelsKnown {
		t.Errorf("old metadata: got %+v, %v; want models unknown", got, err)
	}
	bad := []struct {
		name string
		b    []byte
	}{
		{"flag not 1", append(append([]byte{}, old...), 2, 0)},
		{"count without hashes", append(append([]byte{}, old...), 1, 2)},
		{"hashes out of order", append(append([]byte{}, old...), append([]byte{1, 2}, []byte(NewModelSet("a")+NewModelSet("a"))...)...)},
	}
	for _, tc := range bad {
		if _, err := DecodeMeta(tc.b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", tc.name, err)
		}
	}
}

// TestSetModelsSpreads checks that a cell's models reach another node's
// table, and that a list too long for the metadata is advertised as
// unknown rather than cut.
func TestSetModelsSpreads(t *testing.T) {
	g := startNode(t, fastConfig("g1", RoleGlobal, ""))
	c := startNode(t, fastConfig("c1", RoleCell, "cell-1"), g.Addr())
	eventually(t, waitFor, "the cell in the global's table", func() bool { _, ok := g.Table().Get("cell-1"); return ok })
	if e, _ := g.Table().Get("cell-1"); e.Member.ModelsKnown {
		t.Fatal("models known before SetModels")
	}
	changed, err := c.SetModels(true, []string{"llama", "lora-a"}, time.Second)
	if err != nil || !changed {
		t.Fatalf("SetModels: %v, %v", changed, err)
	}
	if changed, _ := c.SetModels(true, []string{"lora-a", "llama"}, time.Second); changed {
		t.Error("the same models in another order changed the metadata")
	}
	eventually(t, waitFor, "the models in the global's table", func() bool {
		e, _ := g.Table().Get("cell-1")
		return e.Member.ModelsKnown && e.Member.Models.Has("llama") && e.Member.Models.Has("lora-a") && !e.Member.Models.Has("qwen")
	})
	var many []string
	for i := range 200 {
		many = append(many, "adapter-"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	if _, err := c.SetModels(true, many, time.Second); err != nil {
		t.Fatal(err)
	}
	if m := c.LocalMember(); m.ModelsKnown {
		t.Errorf("200 models fit the metadata? %d listed", m.Models.Len())
	}
	eventually(t, waitFor, "unknown models in the global's table", func() bool {
		e, _ := g.Table().Get("cell-1")
		return !e.Member.ModelsKnown
	})
}
