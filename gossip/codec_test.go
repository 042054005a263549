package gossip

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// sampleSummary builds a small summary for codec tests.
func sampleSummary(t testing.TB, seed uint64, n int) *Summary {
	r := rand.New(rand.NewPCG(seed, seed))
	cfg := DefaultSummaryConfig()
	cfg.ExpectedElements = 64
	b := mustBuilder(t, cfg)
	for range n {
		b.AddChain(randChain(r, 12))
	}
	return b.Build()
}

func sampleMessages(t testing.TB) (*Header, *Snapshot, *Delta, *FetchRequest) {
	s1, s2 := sampleSummary(t, 1, 10), sampleSummary(t, 2, 10)
	h := &Header{Cell: "eu-west-1a", Epoch: 1700000000000000000, Gen: 7, Seq: 19,
		Load:   lightestLoad(Load{ActiveRequests: 12, ActiveBlocks: 3400, FreeBlocks: 90000, Pods: 16}, 40, 40, 90, 700, 701, 1200, 1500, 1500, 2000),
		Params: s2.Params(), Elements: s2.Elements()}
	snap := &Snapshot{Cell: "eu-west-1a", Epoch: h.Epoch, Gen: 7, Params: s2.Params(), Elements: s2.Elements(), Bits: s2.Words()}
	d := &Delta{Cell: "eu-west-1a", Epoch: h.Epoch, FromGen: 6, ToGen: 7, Params: s2.Params(), Elements: s2.Elements(), Flipped: diffWords(s1, s2)}
	f := &FetchRequest{From: "globald-0", Cell: "eu-west-1a", Epoch: h.Epoch, Gen: 6}
	return h, snap, d, f
}

func TestCodecRoundTrip(t *testing.T) {
	h, snap, d, f := sampleMessages(t)

	gh, err := DecodeHeader(EncodeHeader(h))
	if err != nil || !reflect.DeepEqual(gh, h) {
		t.Fatalf("header: got %+v, %v; want %+v", gh, err, h)
	}
	h0 := &Header{Cell: "c", Epoch: 1, Seq: 1, Load: Load{Pods: 2}}
	if got, err := DecodeHeader(EncodeHeader(h0)); err != nil || !reflect.DeepEqual(got, h0) {
		t.Fatalf("gen-0 header: got %+v, %v; want %+v", got, err, h0)
	}
	gs, err := DecodeSnapshot(EncodeSnapshot(snap))
	if err != nil || !reflect.DeepEqual(gs, snap) {
		t.Fatalf("snapshot: got %+v, %v; want %+v", gs, err, snap)
	}
	db, err := EncodeDelta(d)
	if err != nil {
		t.Fatal(err)
	}
	gd, err := DecodeDelta(db)
	if err != nil || !gd.Flipped.Equals(d.Flipped) {
		t.Fatalf("delta: got %v, %v; want flipped %v", gd, err, d.Flipped)
	}
	gd.Flipped, d.Flipped = nil, nil
	if !reflect.DeepEqual(gd, d) {
		t.Fatalf("delta fields: got %+v, want %+v", gd, d)
	}
	gf, err := DecodeFetch(EncodeFetch(f))
	if err != nil || !reflect.DeepEqual(gf, f) {
		t.Fatalf("fetch: got %+v, %v; want %+v", gf, err, f)
	}
	for _, st := range []*CellState{{Header: *h, Snapshot: snap}, {Header: *h0}} {
		got, err := DecodeCellState(EncodeCellState(st))
		if err != nil || !reflect.DeepEqual(got, st) {
			t.Fatalf("state: got %+v, %v; want %+v", got, err, st)
		}
	}
	if got := len(EncodeHeader(h)); got > 128 {
		t.Fatalf("header is %d bytes, want at most 128 (it rides in UDP gossip)", got)
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	h, snap, d, f := sampleMessages(t)
	hb := EncodeHeader(h)
	sb := EncodeSnapshot(snap)
	db, _ := EncodeDelta(d)
	fb := EncodeFetch(f)
	withByte := func(b []byte, i int, v byte) []byte {
		c := append([]byte(nil), b...)
		c[i] = v
		return c
	}
	bigM := &Snapshot{Cell: "c", Epoch: 1, Gen: 1, Params: Params{M: 128, K: 3, Stride: 4, Head: 1}, Bits: make([]uint64, 2)}
	beyond := roaring.BitmapOf(uint32(d.Params.M)) // a position past the filter
	dBeyond, _ := EncodeDelta(&Delta{Cell: "c", Epoch: 1, FromGen: 1, ToGen: 2, Params: d.Params, Flipped: beyond})
	dBackwards, _ := EncodeDelta(&Delta{Cell: "c", Epoch: 1, FromGen: 2, ToGen: 2, Params: d.Params, Flipped: roaring.New()})
	tests := []struct {
		name   string
		decode func([]byte) error
		in     []byte
	}{
		{"header empty", decodeHeaderErr, nil},
		{"header version", decodeHeaderErr, withByte(hb, 0, 9)},
		{"header type", decodeHeaderErr, withByte(hb, 1, typeSnapshot)},
		{"header truncated", decodeHeaderErr, hb[:len(hb)-1]},
		{"header trailing", decodeHeaderErr, append(append([]byte(nil), hb...), 0)},
		{"snapshot truncated bits", decodeSnapshotErr, sb[:len(sb)-8]},
		{"snapshot extra bits", decodeSnapshotErr, append(append([]byte(nil), sb...), make([]byte, 8)...)},
		{"snapshot gen 0", decodeSnapshotErr, EncodeSnapshot(&Snapshot{Cell: "c", Params: bigM.Params, Bits: bigM.Bits})},
		{"snapshot bad M", decodeSnapshotErr, EncodeSnapshot(&Snapshot{Cell: "c", Gen: 1, Params: Params{M: 100, K: 1, Stride: 1}, Bits: make([]uint64, 2)})},
		{"snapshot huge M without bytes", decodeSnapshotErr, EncodeSnapshot(&Snapshot{Cell: "c", Gen: 1, Params: Params{M: MaxFilterBits, K: 1, Stride: 1}})},
		{"snapshot empty cell", decodeSnapshotErr, EncodeSnapshot(&Snapshot{Gen: 1, Params: bigM.Params, Bits: bigM.Bits})},
		{"delta truncated", decodeDeltaErr, db[:len(db)-3]},
		{"delta not roaring", decodeDeltaErr, append(db[:len(db)-int(d.Flipped.GetSerializedSizeInBytes())], make([]byte, 16)...)},
		{"delta position beyond M", decodeDeltaErr, dBeyond},
		{"delta to <= from", decodeDeltaErr, dBackwards},
		{"fetch no requester", decodeFetchErr, EncodeFetch(&FetchRequest{Cell: "c"})},
		{"fetch trailing", decodeFetchErr, append(append([]byte(nil), fb...), 1)},
		{"state mismatched snapshot", decodeStateErr, EncodeCellState(&CellState{Header: Header{Cell: "other", Epoch: 1, Gen: 1, Params: snap.Params}, Snapshot: snap})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode(tc.in)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got err %v, want one wrapping ErrMalformed", err)
			}
		})
	}
}

func decodeHeaderErr(b []byte) error   { _, err := DecodeHeader(b); return err }
func decodeSnapshotErr(b []byte) error { _, err := DecodeSnapshot(b); return err }
func decodeDeltaErr(b []byte) error    { _, err := DecodeDelta(b); return err }
func decodeFetchErr(b []byte) error    { _, err := DecodeFetch(b); return err }
func decodeStateErr(b []byte) error    { _, err := DecodeCellState(b); return err }

func TestMetaRoundTripAndLimits(t *testing.T) {
	long := string(make([]byte, MaxCellIDLen+1))
	tests := []struct {
		name    string
		m       NodeMeta
		wantErr bool
	}{
		{"cell", NodeMeta{Role: RoleCell, CellID: "us-east-1b", HTTPAddr: "10.0.0.5:8080", GRPCAddr: "10.0.0.5:9090"}, false},
		{"global", NodeMeta{Role: RoleGlobal, HTTPAddr: "[::1]:80"}, false},
		{"cell without id", NodeMeta{Role: RoleCell}, true},
		{"bad role", NodeMeta{Role: 7}, true},
		{"long id", NodeMeta{Role: RoleCell, CellID: long}, true},
		{"bad addr", NodeMeta{Role: RoleGlobal, HTTPAddr: "nohostport"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := EncodeMeta(tc.m)
			got, err := DecodeMeta(b)
			if (err != nil) != tc.wantErr {
				t.Fatalf("DecodeMeta error = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && got != tc.m {
				t.Fatalf("DecodeMeta = %+v, want %+v", got, tc.m)
			}
		})
	}
	max := NodeMeta{Role: RoleCell, CellID: string(make([]byte, MaxCellIDLen)),
		HTTPAddr: "h:" + string(make([]byte, MaxAddrLen-2)), GRPCAddr: "g:" + string(make([]byte, MaxAddrLen-2))}
	if n := len(EncodeMeta(max)); n > MaxMetaSize {
		t.Fatalf("largest metadata is %d bytes, want at most %d", n, MaxMetaSize)
	}
}

// lightestLoad is l with its lightest pods taken from every pod's load.
func lightestLoad(l Load, pods ...int) Load {
	l.SetLightest(pods)
	return l
}
