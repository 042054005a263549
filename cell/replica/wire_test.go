package replica

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/cellrouter/cellrouter/cell/load"
)

func TestChangesRoundTripAndSplit(t *testing.T) {
	var cs []load.Change
	for i := range 200 {
		cs = append(cs, load.Change{Op: load.OpStart, ID: uint64(i + 1), Pod: "pod-12", Blocks: 40, PrefillBlocks: 12, Template: "t"},
			load.Change{Op: load.OpFirstToken, ID: uint64(i + 1), Pod: "pod-12"}, load.Change{Op: load.OpDone, ID: uint64(i + 1), Pod: "pod-12"},
			load.Change{Op: load.OpLive, ID: uint64(i + 1), Pod: "pod-12", Blocks: 40, PrefillBlocks: 12, Template: "t", PrefillDone: i%2 == 0})
	}
	bodies := EncodeChanges(42, cs, 1100)
	if len(bodies) < 2 {
		t.Fatalf("%d bodies for %d changes, want them split", len(bodies), len(cs))
	}
	var got []load.Change
	for _, b := range bodies {
		if len(b) > 1100 {
			t.Fatalf("body of %d bytes, limit 1100", len(b))
		}
		run, part, err := DecodeChanges(b)
		if err != nil || run != 42 {
			t.Fatalf("DecodeChanges = run %d, %v; want 42, nil", run, err)
		}
		got = append(got, part...)
	}
	if !reflect.DeepEqual(got, cs) {
		t.Fatalf("round trip lost changes: got %d, want %d", len(got), len(cs))
	}
	if bodies := EncodeChanges(1, nil, 1100); len(bodies) != 0 {
		t.Fatalf("no changes gave %d bodies", len(bodies))
	}
}

func FuzzDecodeChanges(f *testing.F) {
	for _, b := range EncodeChanges(7, []load.Change{{Op: load.OpStart, ID: 1, Pod: "p", Blocks: 3, PrefillBlocks: 1}, {Op: load.OpDone, ID: 1, Pod: "p"}}, 1100) {
		f.Add(b)
	}
	for _, b := range EncodeChanges(7, []load.Change{{Op: load.OpLive, ID: 1, Pod: "p", Blocks: 3, PrefillBlocks: 1, PrefillDone: true}}, 1100) {
		f.Add(b)
	}
	f.Add([]byte{wireVersion, 1, 9})
	f.Add([]byte{wireVersion, 1, byte(load.OpLive), 1, 1, 'p', 3, 1, 0, 2}) // a bad prefill-done flag
	f.Fuzz(func(t *testing.T, b []byte) {
		run, cs, err := DecodeChanges(b)
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.Op < load.OpStart || c.Op > load.OpLive || c.PrefillBlocks > c.Blocks || len(c.Pod) > MaxName || (c.PrefillDone && c.Op != load.OpLive) {
				t.Fatalf("decoded an invalid change %+v", c)
			}
		}
		bodies := EncodeChanges(run, cs, 1<<30)
		if len(bodies) != 1 {
			t.Fatalf("re-encode gave %d bodies", len(bodies))
		}
		run2, cs2, err := DecodeChanges(bodies[0])
		if err != nil || run2 != run || !reflect.DeepEqual(cs, cs2) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

// BenchmarkEncodeDecodeChanges measures one flush of 64 changes (a busy
// replica's 20ms) into bodies and back.
func BenchmarkEncodeDecodeChanges(b *testing.B) {
	var cs []load.Change
	for i := range 64 {
		cs = append(cs, load.Change{Op: load.Op(i%3 + 1), ID: uint64(1000 + i), Pod: "pod-017", Blocks: 800, PrefillBlocks: 300, Template: "chat"})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for _, body := range EncodeChanges(42, cs, 1100) {
			if _, _, err := DecodeChanges(body); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestDecodeLiveFlag checks that a live change's prefill-done byte must
// be 0 or 1, and must be there.
func TestDecodeLiveFlag(t *testing.T) {
	body := EncodeChanges(7, []load.Change{{Op: load.OpLive, ID: 1, Pod: "p", Blocks: 3, PrefillBlocks: 1}}, 1100)[0]
	if _, _, err := DecodeChanges(body); err != nil {
		t.Fatalf("a valid live change: %v", err)
	}
	bad := append([]byte(nil), body...)
	bad[len(bad)-1] = 2
	if _, _, err := DecodeChanges(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("flag 2: err = %v, want ErrMalformed", err)
	}
	if _, _, err := DecodeChanges(body[:len(body)-1]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("no flag: err = %v, want ErrMalformed", err)
	}
}

// BenchmarkResync measures one resync of 2,000 requests in flight: the
// snapshot of the sharer's ticket states and their encoding into bodies.
// It reports the bytes a peer receives.
func BenchmarkResync(b *testing.B) {
	tr := load.NewTracker()
	s, err := New(DefaultConfig(), tr, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := &counting{}
	s.send.Store(&senderBox{c})
	for i := range 2000 {
		tr.Start(fmt.Sprintf("pod-%03d", i%32), 800, 300, "")
	}
	s.Flush(c)
	c.bytes = 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Resync(c)
	}
	b.ReportMetric(float64(c.bytes)/float64(b.N), "bytes/resync")
}

// counting is a Sender that counts the bytes it is given.
type counting struct{ bytes int }

func (c *counting) SendPeers(_ uint8, body []byte, _ bool) (int, error) {
	c.bytes += len(body)
	return 1, nil
}
