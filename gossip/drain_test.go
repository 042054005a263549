package gossip

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestDrainRoundTrip(t *testing.T) {
	for _, d := range []Drain{{Cell: "c", Pod: "p"}, {Cell: "c", Cancel: true}, {Pod: "p"}} {
		got, err := DecodeDrain(EncodeDrain(d))
		if err != nil || got != d {
			t.Fatalf("DecodeDrain(EncodeDrain(%+v)) = %+v, %v", d, got, err)
		}
	}
	if _, err := DecodeDrain(EncodeDrain(Drain{})); err == nil {
		t.Fatalf("a drain of nothing decoded")
	}
}

// TestDrainWireUnchanged pins the bytes of a drain: the format moved here
// from package cell/replica, and mixed releases in one pool must agree.
func TestDrainWireUnchanged(t *testing.T) {
	got := EncodeDrain(Drain{Cell: "c1", Pod: "p", Cancel: true})
	want := []byte{1, 2, 'c', '1', 1, 'p', 1}
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeDrain = %v, want %v", got, want)
	}
}

func FuzzDecodeDrain(f *testing.F) {
	f.Add(EncodeDrain(Drain{Cell: "c", Pod: "p", Cancel: true}))
	f.Add([]byte{drainVersion, 0, 0, 2})
	f.Add(binary.AppendUvarint([]byte{drainVersion}, 1<<40))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDrain(b)
		if err != nil {
			return
		}
		if len(d.Cell) > MaxDrainName || len(d.Pod) > MaxDrainName {
			t.Fatalf("decoded names above the bound: %d, %d bytes", len(d.Cell), len(d.Pod))
		}
		if d2, err := DecodeDrain(EncodeDrain(d)); err != nil || d2 != d {
			t.Fatalf("re-decode: %+v, %v; want %+v", d2, err, d)
		}
	})
}
