package gossip

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// refFilter is the naive model of a summary: the set of bit positions the
// inserted hashes select, kept in a map.
type refFilter struct {
	p    Params
	bits map[uint64]bool
}

func newRefFilter(p Params, hashes []blockhash.Hash) refFilter {
	r := refFilter{p: p, bits: map[uint64]bool{}}
	for _, h := range hashes {
		for _, pos := range refPositions(h, p) {
			r.bits[pos] = true
		}
	}
	return r
}

// refPositions computes a hash's K bit positions the slow, obvious way:
// the block is floor(h * (M/512) / 2^64) in big-integer arithmetic, and the
// positions in it are successive 9-bit fields of h2 (the splitmix64
// finaliser of h, made odd), seven per draw, the next draw remixed.
func refPositions(h blockhash.Hash, p Params) []uint64 {
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	x := uint64(h) ^ 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	draw := x | 1
	blk := new(big.Int).SetUint64(uint64(h))
	blk.Mul(blk, new(big.Int).SetUint64(p.M/512)).Div(blk, two64)
	var out []uint64
	for i := 0; i < int(p.K); i++ {
		if i > 0 && i%7 == 0 {
			draw = (draw ^ (draw >> 30)) * 0xbf58476d1ce4e5b9
			draw ^= draw >> 31
		}
		out = append(out, blk.Uint64()*512+(draw>>(9*(i%7)))%512)
	}
	return out
}

// check fails unless s has exactly the reference's params and set bits.
func (r refFilter) check(t *testing.T, what string, s *Summary) {
	t.Helper()
	if s.Params() != r.p {
		t.Fatalf("%s: params %+v, want %+v", what, s.Params(), r.p)
	}
	w := s.Words()
	n := 0
	for i := uint64(0); i < r.p.M; i++ {
		got := w[i/64]&(1<<(i%64)) != 0
		if got != r.bits[i] {
			t.Fatalf("%s: bit %d = %v, want %v", what, i, got, r.bits[i])
		}
		if got {
			n++
		}
	}
	if n != len(r.bits) {
		t.Fatalf("%s: %d bits set, want %d", what, n, len(r.bits))
	}
}

// deliver sends a catchup through the wire format and applies it to rep.
func deliver(t *testing.T, rep *Replica, c Catchup) (bool, error) {
	t.Helper()
	switch {
	case c.Delta != nil:
		b, err := EncodeDelta(c.Delta)
		if err != nil {
			t.Fatalf("EncodeDelta: %v", err)
		}
		d, err := DecodeDelta(b)
		if err != nil {
			t.Fatalf("DecodeDelta: %v", err)
		}
		return rep.ApplyDelta(d)
	case c.Snapshot != nil:
		s, err := DecodeSnapshot(EncodeSnapshot(c.Snapshot))
		if err != nil {
			t.Fatalf("DecodeSnapshot: %v", err)
		}
		return rep.ApplySnapshot(s)
	}
	return false, nil
}

// TestDeltaAndSnapshotPathsAgree is the property test of generations: over
// random sequences of generations (content churn, and capacity changes that
// change the filter shape), a receiver fed every catchup, one fed only every
// third generation, and one fed only the final snapshot all hold exactly the
// publisher's final filter, which equals the naive reference bit for bit.
func TestDeltaAndSnapshotPathsAgree(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		r := rand.New(rand.NewPCG(seed, 77))
		cfg := DefaultSummaryConfig()
		cfg.ExpectedElements = 256
		b := mustBuilder(t, cfg)
		pub, err := NewPublisher("c1", 1000+seed, 4)
		if err != nil {
			t.Fatal(err)
		}
		every, third := &Replica{}, &Replica{}
		pool := make([][]blockhash.Hash, 0, 64)
		var deltas, snaps int
		for gen := 1; gen <= 25; gen++ {
			// Churn: drop a few chains, add a few; sometimes a burst that
			// outgrows the filter, sometimes a collapse that shrinks it.
			switch {
			case r.IntN(8) == 0:
				for range 40 + r.IntN(60) {
					pool = append(pool, randChain(r, 1+r.IntN(64)))
				}
			case r.IntN(8) == 0 && len(pool) > 4:
				pool = pool[:len(pool)/8]
			default:
				for range r.IntN(3) {
					if len(pool) > 0 {
						i := r.IntN(len(pool))
						pool = append(pool[:i], pool[i+1:]...)
					}
				}
				for range r.IntN(4) {
					pool = append(pool, randChain(r, 1+r.IntN(64)))
				}
			}
			var kept []blockhash.Hash
			for _, c := range pool {
				for d, h := range c {
					if b.Add(h, d+1) {
						kept = append(kept, h)
					}
				}
			}
			s := b.Build()
			if got := pub.Publish(s); got != uint64(gen) {
				t.Fatalf("seed %d: Publish = gen %d, want %d", seed, got, gen)
			}
			ref := newRefFilter(s.Params(), kept)
			ref.check(t, "built summary", s)

			c := pub.Since(every.Epoch, every.Gen)
			if c.Delta != nil {
				deltas++
			} else {
				snaps++
			}
			if ok, err := deliver(t, every, c); !ok || err != nil {
				t.Fatalf("seed %d gen %d: apply = %v, %v; want true, nil", seed, gen, ok, err)
			}
			ref.check(t, "every-generation replica", every.Summary)
			// Applying the same catchup again is a no-op.
			if ok, err := deliver(t, every, c); ok || err != nil {
				t.Fatalf("seed %d gen %d: second apply = %v, %v; want false, nil", seed, gen, ok, err)
			}
			ref.check(t, "every-generation replica after a duplicate", every.Summary)

			if gen%3 == 0 {
				if ok, err := deliver(t, third, pub.Since(third.Epoch, third.Gen)); !ok || err != nil {
					t.Fatalf("seed %d gen %d: third apply = %v, %v; want true, nil", seed, gen, ok, err)
				}
				ref.check(t, "every-third replica", third.Summary)
			}
		}
		last := &Replica{}
		if ok, err := deliver(t, last, pub.Since(0, 0)); !ok || err != nil {
			t.Fatalf("seed %d: final snapshot apply = %v, %v", seed, ok, err)
		}
		if !every.Summary.Equal(last.Summary) || !last.Summary.Equal(pub.Current()) {
			t.Fatalf("seed %d: delta path and snapshot path differ", seed)
		}
		if deltas == 0 {
			t.Fatalf("seed %d: no generation travelled as a delta", seed)
		}
		if snaps == 0 {
			t.Fatalf("seed %d: no generation travelled as a snapshot", seed)
		}
	}
}

func TestReplicaOrderingAndGaps(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	cfg := DefaultSummaryConfig()
	cfg.ExpectedElements = 128
	b := mustBuilder(t, cfg)
	pub, _ := NewPublisher("c1", 10, 8)
	base := randChain(r, 200)
	var sums []*Summary
	for g := 0; g < 4; g++ {
		b.AddChain(base[:100+10*g])
		s := b.Build()
		sums = append(sums, s)
		pub.Publish(s)
	}
	rep := &Replica{}
	// A delta to an empty replica is a gap.
	_, err := rep.ApplyDelta(&Delta{Cell: "c1", Epoch: 10, FromGen: 1, ToGen: 2, Params: sums[1].Params(), Flipped: roaring.New()})
	var gap *GapError
	if !errors.As(err, &gap) || !errors.Is(err, ErrNeedSnapshot) {
		t.Fatalf("delta on empty replica: err = %v, want a *GapError wrapping ErrNeedSnapshot", err)
	}
	snap2 := &Snapshot{Cell: "c1", Epoch: 10, Gen: 2, Params: sums[1].Params(), Elements: sums[1].Elements(), Bits: sums[1].Words()}
	if ok, err := rep.ApplySnapshot(snap2); !ok || err != nil {
		t.Fatalf("snapshot gen 2: %v, %v; want true, nil", ok, err)
	}
	// An older snapshot of the same epoch is ignored.
	snap1 := &Snapshot{Cell: "c1", Epoch: 10, Gen: 1, Params: sums[0].Params(), Elements: sums[0].Elements(), Bits: sums[0].Words()}
	if ok, err := rep.ApplySnapshot(snap1); ok || err != nil || rep.Gen != 2 {
		t.Fatalf("older snapshot: %v, %v, gen %d; want false, nil, gen 2", ok, err, rep.Gen)
	}
	// A delta from gen 3 does not apply to gen 2.
	c := pub.Since(10, 3)
	if c.Delta == nil {
		t.Fatalf("Since(10, 3) = snapshot, want a delta")
	}
	if _, err := rep.ApplyDelta(c.Delta); !errors.Is(err, ErrNeedSnapshot) {
		t.Fatalf("delta 3->4 on gen 2: err = %v, want ErrNeedSnapshot", err)
	}
	// A composed delta 2->4 does.
	c = pub.Since(10, 2)
	if c.Delta == nil || c.Delta.FromGen != 2 || c.Delta.ToGen != 4 {
		t.Fatalf("Since(10, 2) = %+v, want a delta 2->4", c)
	}
	if ok, err := rep.ApplyDelta(c.Delta); !ok || err != nil || !rep.Summary.Equal(sums[3]) {
		t.Fatalf("delta 2->4: %v, %v; want true, nil and the gen 4 summary", ok, err)
	}
	// Up to date: nothing to send.
	if c := pub.Since(10, 4); c.Delta != nil || c.Snapshot != nil {
		t.Fatalf("Since(current) = %+v, want nothing", c)
	}
	// A restarted cell (higher epoch, gen 1) wins over the old epoch.
	snapNew := &Snapshot{Cell: "c1", Epoch: 11, Gen: 1, Params: sums[0].Params(), Elements: sums[0].Elements(), Bits: sums[0].Words()}
	if ok, err := rep.ApplySnapshot(snapNew); !ok || err != nil || rep.Epoch != 11 || rep.Gen != 1 {
		t.Fatalf("new-epoch snapshot: %v, %v, %d/%d; want true, nil, 11/1", ok, err, rep.Epoch, rep.Gen)
	}
	// Another epoch on the publisher side gets a snapshot.
	if c := pub.Since(9, 3); c.Snapshot == nil {
		t.Fatalf("Since(other epoch) = %+v, want a snapshot", c)
	}
	// A message of another cell is refused.
	if _, err := rep.ApplySnapshot(&Snapshot{Cell: "c2", Epoch: 99, Gen: 1, Params: snap1.Params, Bits: snap1.Bits}); err == nil {
		t.Fatalf("snapshot of another cell: err = nil, want an error")
	}
}

func TestSinceSendsSnapshotWhenDeltaIsLarger(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	cfg := DefaultSummaryConfig()
	cfg.ExpectedElements = 4096
	b := mustBuilder(t, cfg)
	pub, _ := NewPublisher("c1", 1, 8)
	for range 2 {
		// Entirely new content each generation: about half the bits flip.
		for range 4000 {
			b.Add(blockhash.Hash(r.Uint64()), 0)
		}
		pub.Publish(b.Build())
	}
	if c := pub.Since(1, 1); c.Snapshot == nil {
		t.Fatalf("Since after a full rewrite = delta, want a snapshot")
	}
	// History is bounded: a peer further back than it gets a snapshot.
	for range 10 {
		for range 10 {
			b.Add(blockhash.Hash(r.Uint64()), 0)
		}
		pub.Publish(b.Build())
	}
	if c := pub.Since(1, 2); c.Snapshot == nil {
		t.Fatalf("Since beyond the history = delta, want a snapshot")
	}
}
