package gossip

import (
	"errors"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
)

// ErrNeedSnapshot is wrapped by a GapError.
var ErrNeedSnapshot = errors.New("gossip: delta does not apply, snapshot needed")

// GapError says a Delta did not apply to the generation a Replica holds; the
// receiver should ask the cell for a Snapshot. errors.Is(err,
// ErrNeedSnapshot) holds for it.
type GapError struct {
	Cell               string
	HaveEpoch, HaveGen uint64
	Epoch, FromGen     uint64
}

// Error implements error.
func (e *GapError) Error() string {
	return fmt.Sprintf("gossip: cell %s: delta from %d/%d does not apply to held %d/%d, snapshot needed",
		e.Cell, e.Epoch, e.FromGen, e.HaveEpoch, e.HaveGen)
}

// Unwrap returns ErrNeedSnapshot.
func (e *GapError) Unwrap() error { return ErrNeedSnapshot }

// Replica is the receiver side of one cell's summary generations: the
// generation it holds and its Summary. Applying is idempotent: a message for
// a generation the replica already holds or has passed is ignored. The zero
// Replica holds nothing. A Replica is not safe for concurrent use, but the
// Summary it hands out is immutable (each apply makes a new one).
type Replica struct {
	// Cell is the cell id, set by the first applied message.
	Cell string
	// Epoch and Gen name the held generation (Gen 0: none; Epoch may then
	// still be set, refusing snapshots of older epochs).
	Epoch, Gen uint64
	// Summary is the held summary, nil when Gen is 0.
	Summary *Summary
}

// newer reports whether (e1, g1) comes after (e2, g2).
func newer(e1, g1, e2, g2 uint64) bool {
	return e1 > e2 || (e1 == e2 && g1 > g2)
}

func (r *Replica) checkCell(cell string) error {
	if r.Cell != "" && r.Cell != cell {
		return fmt.Errorf("gossip: replica of cell %s got a message of cell %s", r.Cell, cell)
	}
	return nil
}

// ApplySnapshot replaces the held summary with s if (s.Epoch, s.Gen) is
// newer than (r.Epoch, r.Gen), and reports whether it did. The snapshot's Params must be valid and its bits must
// match them (DecodeSnapshot ensures both).
func (r *Replica) ApplySnapshot(s *Snapshot) (bool, error) {
	if err := r.checkCell(s.Cell); err != nil {
		return false, err
	}
	if err := s.Params.Validate(); err != nil {
		return false, err
	}
	if uint64(len(s.Bits))*64 != s.Params.M {
		return false, fmt.Errorf("gossip: snapshot of cell %s has %d words for %d bits", s.Cell, len(s.Bits), s.Params.M)
	}
	if s.Gen == 0 {
		return false, fmt.Errorf("gossip: snapshot of cell %s has generation 0", s.Cell)
	}
	if !newer(s.Epoch, s.Gen, r.Epoch, r.Gen) {
		return false, nil
	}
	r.Cell, r.Epoch, r.Gen, r.Summary = s.Cell, s.Epoch, s.Gen, s.Summary()
	return true, nil
}

// ApplyDelta applies d if it leads from the held generation to a newer one,
// and reports whether it did. A delta the replica has already passed (its
// ToGen is not newer than the held generation) is a no-op, so applying the
// same delta twice changes nothing. A delta that starts elsewhere, or
// changes Params, returns a *GapError: ask for a snapshot.
func (r *Replica) ApplyDelta(d *Delta) (bool, error) {
	if err := r.checkCell(d.Cell); err != nil {
		return false, err
	}
	if r.Gen != 0 && !newer(d.Epoch, d.ToGen, r.Epoch, r.Gen) {
		return false, nil
	}
	if r.Gen == 0 || d.Epoch != r.Epoch || d.FromGen != r.Gen || d.Params != r.Summary.params {
		return false, &GapError{Cell: d.Cell, HaveEpoch: r.Epoch, HaveGen: r.Gen, Epoch: d.Epoch, FromGen: d.FromGen}
	}
	fl := d.Flipped
	if fl == nil {
		fl = roaring.New()
	}
	if !fl.IsEmpty() && uint64(fl.Maximum()) >= d.Params.M {
		return false, fmt.Errorf("gossip: delta of cell %s flips position %d beyond %d bits", d.Cell, fl.Maximum(), d.Params.M)
	}
	r.Summary = r.Summary.withFlipped(fl, d.Elements)
	r.Gen = d.ToGen
	return true, nil
}
