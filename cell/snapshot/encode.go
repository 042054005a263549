package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
)

// Source is the state a snapshot is taken of.
type Source struct {
	// Index is the cell's block index.
	Index *index.Index
	// Applier is the cell's event applier (per-holder sequence numbers and
	// engine block forests); nil writes no holders.
	Applier *events.Applier
	// StreamSeq, when set, returns the last JetStream stream sequence the
	// cell handled; it is read before anything else.
	StreamSeq func() uint64
}

// ErrPodsChanged means a pod slot changed hands while the blocks were
// written: the snapshot would misattribute blocks and is abandoned (the
// next one will do).
var ErrPodsChanged = errors.New("snapshot: pods changed while writing; abandoned")

// WriteStats describes a written snapshot.
type WriteStats struct {
	// Bytes is the snapshot's size.
	Bytes int64
	// Pods, Holders, Blocks and EngineBlocks count what it holds.
	Pods, Holders, Blocks, EngineBlocks int
}

// encoder writes the body through a checksum and counts it.
type encoder struct {
	w   *bufio.Writer
	crc hash.Hash32
	n   int64
	buf []byte
	err error
}

func (e *encoder) flushBuf() {
	if e.err != nil {
		e.buf = e.buf[:0]
		return
	}
	e.crc.Write(e.buf)
	_, e.err = e.w.Write(e.buf)
	e.n += int64(len(e.buf))
	e.buf = e.buf[:0]
}

func (e *encoder) maybeFlush() {
	if len(e.buf) >= 64<<10 {
		e.flushBuf()
	}
}

func (e *encoder) uv(v uint64)  { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) sv(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) u8(v uint8)   { e.buf = append(e.buf, v) }
func (e *encoder) u64(v uint64) { e.buf = binary.LittleEndian.AppendUint64(e.buf, v) }
func (e *encoder) str(s string) { e.uv(uint64(len(s))); e.buf = append(e.buf, s...) }

// Write writes a snapshot of src, identified by id and taken at now, to w.
// It captures the stream position first, then each holder's sequence
// number and forest, then the index (see index.Index.Export for why this
// order makes replaying after the saved numbers converge). It returns
// ErrPodsChanged when a slot changed hands meanwhile.
func Write(w io.Writer, id Identity, src Source, now time.Time) (WriteStats, error) {
	var st WriteStats
	var streamSeq uint64
	if src.StreamSeq != nil {
		streamSeq = src.StreamSeq()
	}

	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.Write(appendHeader(nil)); err != nil {
		return st, err
	}
	e := &encoder{w: bw, crc: crc32.New(crcTable), buf: make([]byte, 0, 80<<10)}
	e.str(id.CellID)
	e.str(id.Model)
	e.uv(uint64(id.BlockSize))
	e.u64(id.HashFingerprint)
	e.str(string(id.layout()))
	e.sv(now.UnixNano())
	e.uv(streamSeq)

	if src.Applier != nil {
		err := src.Applier.EachHolder(func(h *events.HolderState) error {
			e.uv(1) // another holder
			writeHolder(e, h)
			st.Holders++
			st.EngineBlocks += len(h.Blocks)
			e.maybeFlush()
			return e.err
		})
		if err != nil {
			return st, err
		}
	}
	e.uv(0) // no more holders

	// The pods after the holders: every holder captured is registered by
	// then (or dead, and its slot is not alive).
	pods := src.Index.LivePods()
	e.uv(uint64(len(pods)))
	var known index.HostBitmap
	for _, p := range pods {
		e.u8(uint8(p.Slot))
		e.str(p.ID)
		known = known.Set(p.Slot)
	}
	st.Pods = len(pods)

	if src.Index.Layout() != id.layout() {
		return st, fmt.Errorf("snapshot: the identity names the %s layout, the index is %s", id.layout(), src.Index.Layout())
	}
	paged := id.layout() == index.LayoutPaged
	err := src.Index.Export(func(bs []index.ExportedBlock) error {
		n := 0
		for i := range bs {
			if keep(bs[i].Holders, known) > 0 {
				n++
			}
		}
		if n == 0 {
			return nil
		}
		e.uv(uint64(n))
		for i := range bs {
			k := keep(bs[i].Holders, known)
			if k == 0 {
				continue
			}
			e.u64(uint64(bs[i].Hash))
			if paged {
				e.sv(int64(bs[i].Pos))
				e.u64(uint64(bs[i].Page))
			}
			e.uv(uint64(k))
			for _, h := range bs[i].Holders {
				if known.Has(h.Slot) {
					e.u8(uint8(h.Slot))
					e.u8(uint8(h.Tiers))
				}
			}
			e.maybeFlush()
		}
		st.Blocks += n
		return e.err
	})
	if err != nil {
		return st, err
	}
	e.uv(0)
	e.flushBuf()
	if e.err != nil {
		return st, e.err
	}
	if !samePods(pods, src.Index.LivePods()) {
		return st, ErrPodsChanged
	}
	if _, err := bw.Write(appendTrailer(nil, uint64(e.n), e.crc.Sum32())); err != nil {
		return st, err
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	st.Bytes = headerLen + e.n + trailerLen
	return st, nil
}

// writeHolder encodes one holder.
func writeHolder(e *encoder, h *events.HolderState) {
	var flags uint8
	if h.HasSeq {
		flags |= 1
	}
	if h.HasGroup {
		flags |= 2
	}
	e.str(h.ID)
	e.str(h.Pod)
	e.u8(flags)
	e.uv(h.LastSeq)
	e.sv(int64(h.Group))
	e.uv(uint64(len(h.Blocks)))
	for j := range h.Blocks {
		b := &h.Blocks[j]
		e.u64(b.Hash)
		e.sv(int64(b.Parent))
		e.u8(b.Tiers)
		skip := uint8(0)
		if b.Skip {
			skip = 1
		}
		e.u8(skip)
		e.uv(uint64(len(b.Router)))
		for _, r := range b.Router {
			e.u64(uint64(r))
		}
		e.u64(uint64(b.Last))
		e.uv(uint64(len(b.Pending)))
		for _, t := range b.Pending {
			e.uv(uint64(t))
		}
		e.maybeFlush()
	}
}

// keep counts the holders of a block that are among the written pods.
func keep(hs []index.ExportedHolder, known index.HostBitmap) int {
	n := 0
	for _, h := range hs {
		if known.Has(h.Slot) {
			n++
		}
	}
	return n
}

// samePods reports whether every pod of before still has its slot in after.
func samePods(before, after []index.ExportedPod) bool {
	now := make(map[index.Slot]string, len(after))
	for _, p := range after {
		now[p.Slot] = p.ID
	}
	for _, p := range before {
		if id, ok := now[p.Slot]; ok && id != p.ID {
			return false
		}
	}
	return true
}

// errWrap names the operation in an error.
func errWrap(op string, err error) error { return fmt.Errorf("snapshot: %s: %w", op, err) }
