package gossip

import (
	"errors"
	"testing"
)

// legacyMeta is node metadata as versions before the gateway section wrote
// it, built by hand rather than by EncodeMeta: version, type, role, the
// three length-prefixed strings, then optionally the models section.
func legacyMeta(role Role, cell, httpAddr, grpcAddr string, models ...string) []byte {
	b := []byte{WireVersion, typeMeta, byte(role)}
	for _, s := range []string{cell, httpAddr, grpcAddr} {
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	if models != nil {
		set := NewModelSet(models...)
		b = append(b, 1, byte(set.Len()))
		b = append(b, set...)
	}
	return b
}

// TestMetaGateway checks the gateway section: it round-trips with and
// without models, metadata written before it existed still decodes (no
// gateway), a cell without a gateway writes exactly the old bytes, and a
// malformed section is refused.
func TestMetaGateway(t *testing.T) {
	base := NodeMeta{Role: RoleCell, CellID: "c1", HTTPAddr: "10.0.0.5:8080", GRPCAddr: "10.0.0.5:9090"}
	gw := base
	gw.GatewayAddr = "10.0.0.9:8443"
	gwModels := gw
	gwModels.ModelsKnown, gwModels.Models = true, NewModelSet("llama", "qwen")
	for _, m := range []NodeMeta{gw, gwModels} {
		got, err := DecodeMeta(EncodeMeta(m))
		if err != nil || got != m {
			t.Errorf("round trip of %+v: got %+v, %v", m, got, err)
		}
	}

	// Old metadata decodes, with no gateway, and a node without a gateway
	// writes what old nodes wrote (so old globald replicas read it).
	oldPlain := legacyMeta(RoleCell, "c1", "10.0.0.5:8080", "10.0.0.5:9090")
	oldModels := legacyMeta(RoleCell, "c1", "10.0.0.5:8080", "10.0.0.5:9090", "llama", "qwen")
	for _, tc := range []struct {
		name string
		b    []byte
		want NodeMeta
	}{
		{"old without models", oldPlain, base},
		{"old with models", oldModels, func() NodeMeta { m := gwModels; m.GatewayAddr = ""; return m }()},
	} {
		got, err := DecodeMeta(tc.b)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
		if enc := EncodeMeta(got); string(enc) != string(tc.b) {
			t.Errorf("%s: re-encoded as %x, want the old bytes %x", tc.name, enc, tc.b)
		}
	}

	gwSection := append([]byte{metaGateway, 4}, "h:80"...)
	modelsSection := oldModels[len(oldPlain):]
	bad := []struct {
		name string
		b    []byte
	}{
		{"empty gateway", append(append([]byte{}, oldPlain...), metaGateway, 0)},
		{"gateway truncated", append(append([]byte{}, oldPlain...), metaGateway, 9, 'h')},
		{"gateway not host:port", append(append([]byte{}, oldPlain...), append([]byte{metaGateway, 4}, "host"...)...)},
		{"gateway twice", append(append(append([]byte{}, oldPlain...), gwSection...), gwSection...)},
		{"gateway after models", append(append(append([]byte{}, oldPlain...), modelsSection...), gwSection...)},
		{"unknown tag", append(append([]byte{}, oldPlain...), 3, 0)},
	}
	for _, tc := range bad {
		if _, err := DecodeMeta(tc.b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", tc.name, err)
		}
	}

	// The largest metadata without models, gateway included, fits.
	max := NodeMeta{Role: RoleCell, CellID: string(make([]byte, MaxCellIDLen)),
		HTTPAddr: "h:" + string(make([]byte, MaxAddrLen-2)), GRPCAddr: "g:" + string(make([]byte, MaxAddrLen-2)),
		GatewayAddr: "w:" + string(make([]byte, MaxAddrLen-2))}
	if n := len(EncodeMeta(max)); n > MaxMetaSize {
		t.Fatalf("largest metadata with a gateway is %d bytes, want at most %d", n, MaxMetaSize)
	}
}

// TestGatewaySpreads checks that a cell's gateway address reaches another
// node's table through memberlist's metadata.
func TestGatewaySpreads(t *testing.T) {
	g := startNode(t, fastConfig("g1", RoleGlobal, ""))
	cfg := fastConfig("c1", RoleCell, "cell-1")
	cfg.GatewayAddr = "127.0.0.1:18443"
	startNode(t, cfg, g.Addr())
	eventually(t, waitFor, "the cell's gateway in the global's table", func() bool {
		e, ok := g.Table().Get("cell-1")
		return ok && e.Member.GatewayAddr == "127.0.0.1:18443" && len(e.Endpoints) == 1 &&
			e.Endpoints[0].Member.GatewayAddr == "127.0.0.1:18443"
	})
}
