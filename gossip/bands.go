package gossip

import (
	"math"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// Band is a priority band as the cells announce their waits: one of
// internal/auth's priorities (BandOf), most important first (Critical,
// Standard, Sheddable), the order of the wire.
type Band uint8

// BandOf is the band of an auth priority, for the cell that announces its
// waits and the global tier that reads them.
func BandOf(p auth.Priority) Band {
	switch p {
	case auth.PriorityCritical:
		return BandCritical
	case auth.PrioritySheddable:
		return BandSheddable
	}
	return BandStandard
}

// The bands a cell announces.
const (
	// BandCritical is work that is never shed while lower work is queued.
	BandCritical Band = iota
	// BandStandard is ordinary work.
	BandStandard
	// BandSheddable is work that goes first when the fleet is saturated.
	BandSheddable
)

// NumBands is how many bands BandWaits holds.
const NumBands = 3

// MaxWireBands bounds how many band waits a bands message may carry: a
// later version may announce more bands than NumBands, and a node of this
// version keeps the first NumBands of them.
const MaxWireBands = 16

// MaxBandWait bounds every announced wait on the wire.
const MaxBandWait = time.Hour

// BandWaits is how long a new request of each band would wait in a cell's
// flow control before it reaches a pod (index: Band); zero says the cell
// would admit it at once.
type BandWaits [NumBands]time.Duration

// Of returns the wait of band b (zero for a band out of range).
func (w BandWaits) Of(b Band) time.Duration {
	if int(b) >= NumBands {
		return 0
	}
	return w[b]
}

// IsZero reports whether every band would be admitted at once.
func (w BandWaits) IsZero() bool { return w == BandWaits{} }

// BandLoad announces a cell replica's band waits. It travels as its own
// message type beside the Header (see Node.SetLoad), not inside it, so that
// a node of an earlier version, whose header decoder refuses bytes it does
// not know, keeps decoding every header: it drops a bands message as one of
// an unknown type and routes as before.
type BandLoad struct {
	// Cell is the publishing cell's id; Node its replica's memberlist name
	// ("" for the cell's first endpoint).
	Cell, Node string
	// Epoch and Seq are those of the header sent with it: a table applies a
	// bands message only if it is newer than the last one it applied from
	// that replica.
	Epoch, Seq uint64
	// Waits are the band waits.
	Waits BandWaits
}

// EncodeBandLoad returns the wire form of b: cell, node, epoch, seq, the
// number of bands, then each wait in microseconds (clamped to 0 and
// MaxBandWait).
func EncodeBandLoad(b *BandLoad) []byte {
	e := newEncoder(typeBands, 32+len(b.Cell)+len(b.Node)+4*NumBands)
	e.str(b.Cell)
	e.str(b.Node)
	e.uv(b.Epoch)
	e.uv(b.Seq)
	e.uv(NumBands)
	for _, w := range b.Waits {
		e.uv(uint64(min(max(w, 0), MaxBandWait) / time.Microsecond))
	}
	return e.b
}

// DecodeBandLoad parses a bands message. It accepts up to MaxWireBands
// waits (keeping the first NumBands; fewer leave the others zero) and
// returns an error wrapping ErrMalformed for anything else.
func DecodeBandLoad(p []byte) (*BandLoad, error) {
	d := newDecoder(p, typeBands, "bands")
	b := &BandLoad{Cell: d.cell(), Node: d.str("node", MaxNodeNameLen)}
	b.Epoch = d.uv("epoch", math.MaxUint64)
	b.Seq = d.uv("seq", math.MaxUint64)
	n := int(d.uv("band count", MaxWireBands))
	for i := range n {
		us := d.uv("band wait", uint64(MaxBandWait/time.Microsecond))
		if i < NumBands {
			b.Waits[i] = time.Duration(us) * time.Microsecond
		}
	}
	if err := d.done("bands"); err != nil {
		return nil, err
	}
	return b, nil
}

// bandsBroadcast is a queued bands message; a newer one of the same cell
// replaces it in the queue (a header does not: they are separate).
type bandsBroadcast struct {
	cell string
	msg  []byte
}

var _ memberlist.NamedBroadcast = (*bandsBroadcast)(nil)

// Invalidates reports whether b is an older bands message of the same cell.
func (h *bandsBroadcast) Invalidates(b memberlist.Broadcast) bool {
	o, ok := b.(*bandsBroadcast)
	return ok && o.cell == h.cell
}

// Name keys the broadcast by cell for the queue's fast invalidation.
func (h *bandsBroadcast) Name() string { return "bands/" + h.cell }

// Message returns the encoded bands message.
func (h *bandsBroadcast) Message() []byte { return h.msg }

// Finished is a no-op.
func (h *bandsBroadcast) Finished() {}

// bandsLocked returns the bands broadcast that goes with header h, or nil:
// one goes out when the load's waits are not all zero or the last ones sent
// were not, so a cell that stops waiting says so once, and a pool that
// never saturates (or one of mixed versions while it does not) never sees
// the message type. n.pubMu must be held.
func (n *Node) bandsLocked(h *Header) *bandsBroadcast {
	w := h.Load.Waits
	if w.IsZero() && n.lastWaits.IsZero() {
		return nil
	}
	n.lastWaits = w
	msg := EncodeBandLoad(&BandLoad{Cell: h.Cell, Node: h.Node, Epoch: h.Epoch, Seq: h.Seq, Waits: w})
	return &bandsBroadcast{cell: h.Cell, msg: msg}
}

// ApplyBands records the band waits of b on its replica if b is newer
// than the last bands message applied from it.
func (t *Table) ApplyBands(b *BandLoad) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	te, err := t.lookup(b.Cell, b.Node)
	if err != nil {
		return err
	}
	e := &te.ep
	if !newer(b.Epoch, b.Seq, te.bandEpoch, te.bandSeq) && !e.BandsUpdatedAt.IsZero() {
		return nil
	}
	te.bandEpoch, te.bandSeq = b.Epoch, b.Seq
	e.Load.Waits, e.BandsUpdatedAt = b.Waits, t.now()
	t.publish()
	return nil
}
