package gossip

import (
	"reflect"
	"testing"
)

// Every decoder of peer input has a fuzz test: it must return an error or a
// message that re-encodes to an equal message, and never panic.

func FuzzDecodeHeader(f *testing.F) {
	h, _, _, _ := sampleMessages(f)
	f.Add(EncodeHeader(h))
	f.Add(EncodeHeader(&Header{Cell: "c", Epoch: 1, Seq: 1}))
	f.Add([]byte{WireVersion, typeHeader})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeader(b)
		if err != nil {
			return
		}
		h2, err := DecodeHeader(EncodeHeader(h))
		if err != nil || !reflect.DeepEqual(h, h2) {
			t.Fatalf("re-decode: %+v, %v; want %+v", h2, err, h)
		}
	})
}

func FuzzDecodeSnapshot(f *testing.F) {
	_, s, _, _ := sampleMessages(f)
	f.Add(EncodeSnapshot(s))
	f.Add(EncodeSnapshot(&Snapshot{Cell: "c", Epoch: 2, Gen: 1, Params: Params{M: 64, K: 1, Stride: 1}, Bits: []uint64{0xff}}))
	f.Add([]byte{WireVersion, typeSnapshot, 1, 'c', 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err != nil {
			return
		}
		if uint64(len(s.Bits))*64 != s.Params.M {
			t.Fatalf("%d words for M %d", len(s.Bits), s.Params.M)
		}
		s2, err := DecodeSnapshot(EncodeSnapshot(s))
		if err != nil || !reflect.DeepEqual(s, s2) {
			t.Fatalf("re-decode: %v", err)
		}
		var r Replica
		if _, err := r.ApplySnapshot(s); err != nil {
			t.Fatalf("ApplySnapshot of a decoded snapshot: %v", err)
		}
	})
}

func FuzzDecodeDelta(f *testing.F) {
	_, _, d, _ := sampleMessages(f)
	b, err := EncodeDelta(d)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	empty := *d
	empty.Flipped = nil
	b, _ = EncodeDelta(&empty)
	f.Add(b)
	f.Add([]byte{WireVersion, typeDelta, 1, 'c', 1, 1, 2, 64, 1, 1, 0, 0, 0x3b, 0x30, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDelta(b)
		if err != nil {
			return
		}
		if !d.Flipped.IsEmpty() && uint64(d.Flipped.Maximum()) >= d.Params.M {
			t.Fatalf("position %d beyond M %d", d.Flipped.Maximum(), d.Params.M)
		}
		b2, err := EncodeDelta(d)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		d2, err := DecodeDelta(b2)
		if err != nil || !d2.Flipped.Equals(d.Flipped) || d2.ToGen != d.ToGen || d2.Params != d.Params {
			t.Fatalf("re-decode: %v", err)
		}
		// Applying a decoded delta to a matching replica must not panic.
		r := Replica{Cell: d.Cell, Epoch: d.Epoch, Gen: d.FromGen, Summary: newSummary(d.Params)}
		if d.FromGen == 0 {
			return
		}
		if ok, err := r.ApplyDelta(d); !ok || err != nil {
			t.Fatalf("ApplyDelta = %v, %v; want true, nil", ok, err)
		}
		if got, want := r.Summary.OnesCount(), int(d.Flipped.GetCardinality()); got != want {
			t.Fatalf("ones after applying to empty = %d, want %d", got, want)
		}
	})
}

func FuzzDecodeFetch(f *testing.F) {
	_, _, _, r := sampleMessages(f)
	f.Add(EncodeFetch(r))
	f.Add(EncodeFetch(&FetchRequest{From: "n", Cell: "c"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeFetch(b)
		if err != nil {
			return
		}
		r2, err := DecodeFetch(EncodeFetch(r))
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("re-decode: %+v, %v; want %+v", r2, err, r)
		}
	})
}

func FuzzDecodeMeta(f *testing.F) {
	f.Add(EncodeMeta(NodeMeta{Role: RoleCell, CellID: "c1", HTTPAddr: "127.0.0.1:8080", GRPCAddr: "127.0.0.1:9090"}))
	f.Add(EncodeMeta(NodeMeta{Role: RoleGlobal}))
	f.Add(EncodeMeta(NodeMeta{Role: RoleCell, CellID: "c1", HTTPAddr: "127.0.0.1:8080", GatewayAddr: "127.0.0.1:8443"}))
	f.Add(EncodeMeta(NodeMeta{Role: RoleCell, CellID: "c1", GatewayAddr: "[::1]:443", ModelsKnown: true, Models: NewModelSet("m")}))
	f.Add([]byte{WireVersion, typeMeta, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeta(b)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decoded meta does not validate: %v", err)
		}
		m2, err := DecodeMeta(EncodeMeta(m))
		if err != nil || m2 != m {
			t.Fatalf("re-decode: %+v, %v; want %+v", m2, err, m)
		}
	})
}

func FuzzDecodeCellState(f *testing.F) {
	h, s, _, _ := sampleMessages(f)
	f.Add(EncodeCellState(&CellState{Header: *h, Snapshot: s}))
	f.Add(EncodeCellState(&CellState{Header: Header{Cell: "c", Epoch: 3, Seq: 1}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeCellState(b)
		if err != nil {
			return
		}
		st2, err := DecodeCellState(EncodeCellState(st))
		if err != nil || !reflect.DeepEqual(st, st2) {
			t.Fatalf("re-decode: %v", err)
		}
		tab := NewTable(nil)
		name := "n"
		if st.Header.Node != "" {
			name = st.Header.Node
		}
		tab.SetMember(Member{Name: name, Role: RoleCell, CellID: st.Header.Cell})
		if err := tab.ApplyCellState(st); err != nil {
			t.Fatalf("ApplyCellState of a decoded state: %v", err)
		}
	})
}

func FuzzDecodePeer(f *testing.F) {
	f.Add(EncodePeer(&PeerMessage{From: "cell/a/r1", Cell: "a", Kind: 1, Body: []byte{1, 2, 3}}))
	f.Add(EncodePeer(&PeerMessage{From: "global-1", Kind: 2}))
	f.Add([]byte{WireVersion, typePeer, 1, 'x', 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodePeer(b)
		if err != nil {
			return
		}
		if m.From == "" || len(m.From) > MaxNodeNameLen || len(m.Cell) > MaxCellIDLen || len(m.Body) > MaxPeerReliableBody {
			t.Fatalf("decoded an out-of-bounds message: %+v", m)
		}
		m2, err := DecodePeer(EncodePeer(m))
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-decode: %+v, %v; want %+v", m2, err, m)
		}
	})
}

func FuzzDecodeBandLoad(f *testing.F) {
	f.Add(EncodeBandLoad(&BandLoad{Cell: "c", Node: "n", Epoch: 1, Seq: 2, Waits: BandWaits{0, 1e6, 2e9}}))
	f.Add(EncodeBandLoad(&BandLoad{Cell: "c"}))
	f.Add([]byte{WireVersion, typeBands, 1, 'c', 0, 1, 1, 5, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := DecodeBandLoad(b)
		if err != nil {
			return
		}
		for _, w := range x.Waits {
			if w < 0 || w > MaxBandWait {
				t.Fatalf("wait %v out of range", w)
			}
		}
		x2, err := DecodeBandLoad(EncodeBandLoad(x))
		if err != nil || !reflect.DeepEqual(x, x2) {
			t.Fatalf("re-decode: %+v, %v; want %+v", x2, err, x)
		}
	})
}
