package gossip

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// TestBandLoadOnTheWire: a bands message round-trips; one with more bands
// than this version knows keeps the first NumBands, one with fewer leaves
// the rest zero; waits beyond MaxBandWait are clamped when encoded and
// refused when decoded, as are trailing bytes.
func TestBandLoadOnTheWire(t *testing.T) {
	b := &BandLoad{Cell: "c", Node: "c/r1", Epoch: 7, Seq: 9,
		Waits: BandWaits{0, 250 * time.Millisecond, 3 * time.Second}}
	got, err := DecodeBandLoad(EncodeBandLoad(b))
	if err != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("round trip: got %+v, %v; want %+v", got, err, b)
	}
	clamped := *b
	clamped.Waits = BandWaits{-time.Second, 2 * MaxBandWait, time.Nanosecond}
	got, err = DecodeBandLoad(EncodeBandLoad(&clamped))
	if err != nil || got.Waits != (BandWaits{0, MaxBandWait, 0}) {
		t.Fatalf("clamped: got %+v, %v; want waits 0, %v, 0", got, err, MaxBandWait)
	}
	wire := func(count int, waits ...uint64) []byte {
		e := newEncoder(typeBands, 32)
		e.str("c")
		e.str("")
		e.uv(1)
		e.uv(2)
		e.uv(uint64(count))
		for _, w := range waits {
			e.uv(w)
		}
		return e.b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want BandWaits // ignored when bad
		bad  bool
	}{
		{"more bands than known", wire(5, 1, 2, 3, 4, 5), BandWaits{time.Microsecond, 2 * time.Microsecond, 3 * time.Microsecond}, false},
		{"fewer bands", wire(1, 10), BandWaits{10 * time.Microsecond}, false},
		{"no bands", wire(0), BandWaits{}, false},
		{"too many bands", wire(MaxWireBands + 1), BandWaits{}, true},
		{"wait too long", wire(1, uint64(MaxBandWait/time.Microsecond)+1), BandWaits{}, true},
		{"truncated", wire(3, 1, 2), BandWaits{}, true},
		{"trailing", append(wire(1, 1), 0), BandWaits{}, true},
		{"header type", EncodeHeader(&Header{Cell: "c", Epoch: 1, Seq: 1}), BandWaits{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeBandLoad(tc.b)
			if tc.bad {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("got %+v, %v; want ErrMalformed", got, err)
				}
				return
			}
			if err != nil || got.Waits != tc.want {
				t.Fatalf("got %+v, %v; want waits %v", got, err, tc.want)
			}
		})
	}
}

// TestHeaderUnchangedByWaits: the header's wire form does not depend on the
// band waits, so nodes of earlier versions decode every header a cell of
// this version sends.
func TestHeaderUnchangedByWaits(t *testing.T) {
	h := Header{Cell: "c", Epoch: 1, Seq: 3, Load: Load{ActiveRequests: 2, Pods: 1}}
	plain := EncodeHeader(&h)
	h.Load.Waits = BandWaits{time.Second, time.Second, time.Second}
	if with := EncodeHeader(&h); !reflect.DeepEqual(with, plain) {
		t.Fatalf("header with waits %x, without %x: want equal", with, plain)
	}
}

// TestTableBands: a table applies a replica's bands message only when it is
// newer than the last, keeps the waits across headers, and drops them
// when the replica restarts (a header of a newer epoch).
func TestTableBands(t *testing.T) {
	now := time.Unix(100, 0)
	tb := NewTable(func() time.Time { return now })
	tb.SetMember(Member{Name: "c1", Role: RoleCell, CellID: "cell-1"})
	if err := tb.ApplyBands(&BandLoad{Cell: "nope", Epoch: 1, Seq: 1}); !errors.Is(err, ErrUnknownCell) {
		t.Fatalf("bands of an unknown cell: %v, want ErrUnknownCell", err)
	}
	w := BandWaits{0, time.Second, 2 * time.Second}
	if err := tb.ApplyBands(&BandLoad{Cell: "cell-1", Node: "c1", Epoch: 1, Seq: 5, Waits: w}); err != nil {
		t.Fatal(err)
	}
	if e, _ := tb.Get("cell-1"); e.Load.Waits != w || !e.Endpoints[0].BandsUpdatedAt.Equal(now) {
		t.Fatalf("entry %+v, want waits %v updated at %v", e, w, now)
	}
	// An older bands message is ignored.
	tb.ApplyBands(&BandLoad{Cell: "cell-1", Node: "c1", Epoch: 1, Seq: 4, Waits: BandWaits{}})
	// A header of the same epoch keeps the waits it does not carry.
	if _, err := tb.ApplyHeader(&Header{Cell: "cell-1", Node: "c1", Epoch: 1, Seq: 6, Load: Load{Pods: 3}}); err != nil {
		t.Fatal(err)
	}
	e, _ := tb.Get("cell-1")
	if e.Load.Waits != w || e.Load.Pods != 3 {
		t.Fatalf("after an old bands message and a header: load %+v, want waits %v and 3 pods", e.Load, w)
	}
	if e.BandsUpdatedAt.IsZero() {
		t.Fatalf("entry's BandsUpdatedAt is zero")
	}
	// A restart (newer epoch) drops them.
	if _, err := tb.ApplyHeader(&Header{Cell: "cell-1", Node: "c1", Epoch: 2, Seq: 1, Load: Load{Pods: 3}}); err != nil {
		t.Fatal(err)
	}
	if e, _ := tb.Get("cell-1"); !e.Load.Waits.IsZero() {
		t.Fatalf("after a restart: waits %v, want zero", e.Load.Waits)
	}
}

// TestBandWaitsReachGlobal: over real memberlist gossip, a cell's band
// waits reach a global replica with its load, and their return to zero
// does too.
func TestBandWaitsReachGlobal(t *testing.T) {
	g := startNode(t, fastConfig("g1", RoleGlobal, ""))
	c := startNode(t, fastConfig("c1", RoleCell, "cell-1"), g.Addr())
	eventually(t, waitFor, "g1 sees cell-1", func() bool { _, ok := g.Table().Get("cell-1"); return ok })
	w := BandWaits{0, 40 * time.Millisecond, 900 * time.Millisecond}
	if err := c.SetLoad(Load{Pods: 2, ActiveRequests: 5, Waits: w}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "waits on g1", func() bool {
		e, _ := g.Table().Get("cell-1")
		return e.Load.Waits == w && e.Load.ActiveRequests == 5
	})
	if err := c.SetLoad(Load{Pods: 2, ActiveRequests: 1}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "zero waits on g1", func() bool {
		e, _ := g.Table().Get("cell-1")
		return e.Load.Waits.IsZero() && e.Load.ActiveRequests == 1
	})
}

// TestBandOf checks that every auth priority has its own band, in the
// wire's order (most important first).
func TestBandOf(t *testing.T) {
	for p, want := range map[auth.Priority]Band{
		auth.PriorityCritical: BandCritical, auth.PriorityStandard: BandStandard, auth.PrioritySheddable: BandSheddable,
	} {
		if got := BandOf(p); got != want {
			t.Errorf("BandOf(%v) = %d, want %d", p, got, want)
		}
	}
}
