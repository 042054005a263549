package snapshot

import (
	"errors"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
)

// FuzzDecode feeds the decoder arbitrary bytes. Anything it accepts must
// restore into a fresh index and applier without error (or be refused by
// the applier's checks, events.ErrRestore) and re-encode to a
// snapshot that decodes to the same counts. The checksum makes random
// bodies fail early, so the seeds include valid files and the fuzzer also
// gets a mode that fixes up the checksum of what it produced.
func FuzzDecode(f *testing.F) {
	id := testIdentity(f)
	st := newCellState(f)
	feed(f, newWorkload(9, 2), 30, st)
	good := encode(f, st, id)
	f.Add(good, false)
	f.Add(good[:len(good)/2], false)
	f.Add(good, true)
	f.Add([]byte("CRSNAPv\x00\x01\x00\x00\x00"), true)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix {
			data = fixChecksum(data)
		}
		snap, err := Decode(data, id)
		if err != nil {
			return
		}
		ix, err := index.New(index.Config{MaxBlocks: 1 << 20, SweepWorkers: 1}) // small: cheap per input
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		s := &cellState{ix: ix, a: newApplierOn(t, ix)}
		if _, err := snap.Restore(ix, s.a, time.Now()); err != nil {
			// A forest with an engine block twice passes Decode; the
			// restore refuses it and the caller discards the state.
			if !errors.Is(err, events.ErrRestore) {
				t.Fatalf("accepted snapshot failed to restore: %v", err)
			}
			return
		}
		again, err := Decode(encode(t, s, id), id)
		if err != nil {
			t.Fatalf("re-encoded snapshot refused: %v", err)
		}
		if again.Holders != snap.Holders || again.EngineBlocks != snap.EngineBlocks || again.Blocks > snap.Blocks {
			t.Fatalf("re-encoded: %d holders %d engine blocks %d blocks, was %d %d %d",
				again.Holders, again.EngineBlocks, again.Blocks, snap.Holders, snap.EngineBlocks, snap.Blocks)
		}
	})
}

// fixChecksum rewrites data's trailer (if it has room for one) to match its
// body, so that the fuzzer reaches the structure checks.
func fixChecksum(data []byte) []byte {
	if len(data) < headerLen+trailerLen {
		return data
	}
	out := append([]byte(nil), data[:len(data)-trailerLen]...)
	copy(out, appendHeader(nil))
	b := out[headerLen:]
	return appendTrailer(out, uint64(len(b)), crc32Sum(b))
}
