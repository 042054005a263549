package snapshot

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
)

// Snapshot is a decoded, checked snapshot, ready to restore. It keeps the
// file's bytes.
type Snapshot struct {
	Meta
	// Pods, Holders, Blocks and EngineBlocks count what it holds.
	Pods, Holders, Blocks, EngineBlocks int
	// Bytes is the file's size.
	Bytes int

	body                []byte
	podsOff, holdersOff int
	blocksOff           int
}

// decoder reads the body; the first error sticks and later reads return
// zeros.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = refuse(ErrCorrupt, "at byte %d: %s", d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uv() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) sv() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) u8() uint8 {
	if d.err != nil || d.off >= len(d.b) {
		d.fail("unexpected end")
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) u64() uint64 {
	if d.err != nil || len(d.b)-d.off < 8 {
		d.fail("unexpected end")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

// count reads a count of items of at least min bytes each, refusing one
// the rest of the body cannot hold.
func (d *decoder) count(min int) int {
	v := d.uv()
	if d.err == nil && v > uint64(len(d.b)-d.off)/uint64(min) {
		d.fail("count %d exceeds the %d bytes left", v, len(d.b)-d.off)
		return 0
	}
	return int(v)
}

func (d *decoder) str() string {
	n := d.count(1)
	if d.err != nil {
		return ""
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s
}

// Decode checks data (magic, version, checksum, identity against want and
// the whole structure) and returns the snapshot. Every refusal wraps
// ErrRefused and ErrCorrupt, ErrVersion or ErrForeign.
func Decode(data []byte, want Identity) (*Snapshot, error) {
	b, err := body(data)
	if err != nil {
		return nil, err
	}
	d := &decoder{b: b}
	s := &Snapshot{body: b, Bytes: len(data)}
	s.CellID = d.str()
	s.Model = d.str()
	s.BlockSize = int(d.uv())
	s.HashFingerprint = d.u64()
	s.Layout = index.Layout(d.str())
	s.Created = time.Unix(0, d.sv())
	s.StreamSeq = d.uv()
	if d.err != nil {
		return nil, d.err
	}
	if err := s.Identity.check(want); err != nil {
		return nil, err
	}
	s.holdersOff = d.off
	seen := map[string]bool{}
	for d.err == nil && more(d) {
		var st events.HolderState
		s.EngineBlocks += readHolder(d, &st, false)
		if seen[st.ID] {
			d.fail("holder %q twice", st.ID)
		}
		seen[st.ID] = true
		s.Holders++
	}
	s.podsOff = d.off
	var known index.HostBitmap
	s.Pods = readPods(d, func(slot index.Slot, _ string) { known = known.Set(slot) })
	s.blocksOff = d.off
	s.Blocks = readBlocks(d, known, s.layout() == index.LayoutPaged, nil)
	if d.err == nil && d.off != len(b) {
		d.fail("%d bytes after the end", len(b)-d.off)
	}
	if d.err != nil {
		return nil, d.err
	}
	return s, nil
}

// more reads a holder marker: 1 before each holder, 0 after the last.
func more(d *decoder) bool {
	switch m := d.uv(); m {
	case 0:
		return false
	case 1:
		return d.err == nil
	default:
		d.fail("holder marker %d", m)
		return false
	}
}

// readPods reads the pods section, calling fn with each.
func readPods(d *decoder, fn func(index.Slot, string)) int {
	n := d.count(2)
	last := -1
	seen := make(map[string]bool, n)
	for i := 0; i < n && d.err == nil; i++ {
		slot := int(d.u8())
		id := d.str()
		switch {
		case slot <= last:
			d.fail("pod slots out of order (%d after %d)", slot, last)
		case id == "":
			d.fail("pod with empty id")
		case seen[id]:
			d.fail("pod %q twice", id)
		}
		last = slot
		seen[id] = true
		if d.err == nil {
			fn(index.Slot(slot), id)
		}
	}
	return n
}

// readHolder reads one holder into st and returns its number of blocks;
// with keep false the blocks are checked but not kept.
func readHolder(d *decoder, st *events.HolderState, keep bool) int {
	st.ID = d.str()
	st.Pod = d.str()
	flags := d.u8()
	st.HasSeq, st.HasGroup = flags&1 != 0, flags&2 != 0
	if flags&^3 != 0 {
		d.fail("holder flags %#x", flags)
	}
	st.LastSeq = d.uv()
	st.Group = int(d.sv())
	if d.err == nil && (st.ID == "" || st.Pod == "") {
		d.fail("holder without id or pod")
	}
	n := d.count(21)
	if keep {
		st.Blocks = make([]events.BlockState, 0, n)
	}
	for j := 0; j < n && d.err == nil; j++ {
		var b events.BlockState
		b.Hash = d.u64()
		b.Parent = int32(d.sv())
		b.Tiers = d.u8()
		skip := d.u8()
		b.Skip = skip == 1
		nr := d.count(8)
		for k := 0; k < nr && d.err == nil; k++ {
			r := index.BlockHash(d.u64())
			if keep {
				b.Router = append(b.Router, r)
			}
		}
		b.Last = index.BlockHash(d.u64())
		np := d.count(1)
		for k := 0; k < np && d.err == nil; k++ {
			t := d.uv()
			if t > 1<<32-1 {
				d.fail("token %d", t)
			}
			if keep {
				b.Pending = append(b.Pending, uint32(t))
			}
		}
		switch {
		case d.err != nil:
		case b.Parent < -1 || int(b.Parent) >= j:
			d.fail("holder %q block %d names parent %d", st.ID, j, b.Parent)
		case b.Tiers == 0:
			d.fail("holder %q block %d on no tier", st.ID, j)
		case skip > 1:
			d.fail("holder %q block %d skip %d", st.ID, j, skip)
		}
		if keep {
			st.Blocks = append(st.Blocks, b)
		}
	}
	return n
}

// readBlocks reads the blocks section, checking each holder slot against
// known, and calls fn (when not nil) with each block's hash and holders.
func readBlocks(d *decoder, known index.HostBitmap, paged bool, fn func(*index.ExportedBlock)) int {
	total := 0
	var hs []index.ExportedHolder
	var b index.ExportedBlock
	for d.err == nil {
		n := d.count(11)
		if n == 0 {
			break
		}
		for i := 0; i < n && d.err == nil; i++ {
			h := index.BlockHash(d.u64())
			var pos int64
			var page index.BlockHash
			if paged {
				pos = d.sv()
				page = index.BlockHash(d.u64())
				if d.err == nil && (pos < 0 || pos > math.MaxInt32 || page == 0 || (pos%index.PageSize == 0) != (page == h)) {
					d.fail("block %#x at position %d of page %#x", h, pos, page)
				}
			}
			k := d.count(2)
			if d.err == nil && (k == 0 || k > index.MaxPods) {
				d.fail("block %#x with %d holders", h, k)
			}
			hs = hs[:0]
			var seen index.HostBitmap
			for j := 0; j < k && d.err == nil; j++ {
				slot := index.Slot(d.u8())
				tiers := index.TierSet(d.u8())
				switch {
				case d.err != nil:
				case !known.Has(slot):
					d.fail("block %#x held by slot %d, which is no pod", h, slot)
				case seen.Has(slot):
					d.fail("block %#x holder %d twice", h, slot)
				case tiers > 7:
					d.fail("block %#x tiers %#x", h, tiers)
				}
				seen = seen.Set(slot)
				hs = append(hs, index.ExportedHolder{Slot: slot, Tiers: tiers})
			}
			if d.err == nil && h == 0 {
				d.fail("block with the reserved zero hash")
			}
			if d.err == nil && fn != nil {
				b = index.ExportedBlock{Hash: h, Holders: hs, Pos: int32(pos), Page: page}
				fn(&b)
			}
		}
		total += n
	}
	return total
}

// restoreBatch is how many ops Restore hands to one Apply call.
const restoreBatch = 1 << 14

// Restore loads the snapshot into ix and a, which should be fresh: it
// registers the pods, then applies the blocks in batches while it gives the
// applier its holders (a may be nil), and finally has the applier evict
// what exceeds each holder's bounds (events.Applier.EnforceBounds). Decode checked the structure, so
// Restore fails only if the index or the applier refuse something (no free
// slot, an engine block twice in a holder's forest); the caller must then
// discard both, which are half-loaded: restore into a fresh state and swap
// it in only on success, as celld does.
func (s *Snapshot) Restore(ix *index.Index, a *events.Applier, now time.Time) (index.ApplyResult, error) {
	var total index.ApplyResult
	if ix.Layout() != s.layout() {
		return total, fmt.Errorf("snapshot: taken from the %s index layout, restored into %s", s.layout(), ix.Layout())
	}
	d := &decoder{b: s.body, off: s.podsOff}
	var slots [index.MaxPods]index.Slot
	var known index.HostBitmap
	var rerr error
	readPods(d, func(old index.Slot, id string) {
		if rerr != nil {
			return
		}
		ns, err := ix.Register(id)
		if err != nil {
			rerr = errWrap("restore pod "+id, err)
			return
		}
		slots[old] = ns
		known = known.Set(old)
	})
	if rerr != nil {
		return total, rerr
	}
	// The holders (the applier's forests) and the blocks (the index) are
	// independent once the pods are registered: restore them side by side.
	herr := make(chan error, 1)
	if a == nil {
		herr <- nil
	} else {
		go func() { herr <- s.restoreHolders(a, now) }()
	}
	ops := make([]index.Op, 0, restoreBatch+8)
	flush := func() {
		r := ix.Apply(ops)
		total.Created += r.Created
		total.CapDrops += r.CapDrops
		total.Stale += r.Stale
		ops = ops[:0]
	}
	d.off = s.blocksOff
	readBlocks(d, known, s.layout() == index.LayoutPaged, func(b *index.ExportedBlock) {
		for _, x := range b.Holders {
			ops = index.RestoreOps(ops, slots[x.Slot], b, x.Tiers)
		}
		if len(ops) >= restoreBatch {
			flush()
		}
	})
	flush()
	if err := <-herr; err != nil {
		return total, err
	}
	if d.err == nil && a != nil {
		// The snapshot may predate the applier's bounds (or wider ones):
		// what a restart brings back stays within them.
		a.EnforceBounds()
	}
	return total, d.err
}

// restoreHolders gives the applier the snapshot's holders, one at a time.
func (s *Snapshot) restoreHolders(a *events.Applier, now time.Time) error {
	d := &decoder{b: s.body, off: s.holdersOff}
	for d.err == nil && more(d) {
		var st events.HolderState
		readHolder(d, &st, true)
		if d.err != nil {
			break
		}
		if err := a.RestoreHolders([]events.HolderState{st}, now); err != nil {
			return err
		}
	}
	return d.err
}
