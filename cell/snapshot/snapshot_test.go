package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/index"
)

// encode writes a snapshot of s to memory.
func encode(t testing.TB, s *cellState, id Identity) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Write(&buf, id, Source{Index: s.ix, Applier: s.a, StreamSeq: func() uint64 { return 77 }}, time.Unix(100, 5)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// restore decodes data into a fresh state.
func restore(t testing.TB, data []byte, id Identity) (*cellState, *Snapshot) {
	t.Helper()
	snap, err := Decode(data, id)
	if err != nil {
		t.Fatal(err)
	}
	s := newCellStateIn(t, id.layout())
	if _, err := snap.Restore(s.ix, s.a, time.Now()); err != nil {
		t.Fatal(err)
	}
	return s, snap
}

// sameState fails unless a and b hold the same exact blocks, holders and
// tiers, and the same holders with the same sequence numbers and forests.
func sameState(t *testing.T, what string, a, b *cellState) {
	t.Helper()
	ca, cb := contents(t, a.ix), contents(t, b.ix)
	if len(ca) == 0 {
		t.Fatalf("%s: the reference index is empty: the test tests nothing", what)
	}
	if !reflect.DeepEqual(ca, cb) {
		t.Fatalf("%s: index contents differ: %d blocks vs %d", what, len(ca), len(cb))
	}
	ha, hb := a.a.ExportHolders(), b.a.ExportHolders()
	if len(ha) != len(hb) {
		t.Fatalf("%s: %d holders vs %d", what, len(ha), len(hb))
	}
	for i := range ha {
		if ha[i].ID != hb[i].ID || ha[i].LastSeq != hb[i].LastSeq || ha[i].HasSeq != hb[i].HasSeq ||
			ha[i].Group != hb[i].Group || ha[i].HasGroup != hb[i].HasGroup {
			t.Fatalf("%s: holder %d: got %+v, want %+v", what, i, hb[i].ID, ha[i].ID)
		}
		if forest(ha[i].Blocks) != forest(hb[i].Blocks) {
			t.Fatalf("%s: holder %s: forests differ", what, ha[i].ID)
		}
	}
}

// samePlaces fails unless a and b keep every exact block at the same place
// in its chain (the paged layout's position and page; zero in the block
// layout).
func samePlaces(t *testing.T, a, b *index.Index) {
	t.Helper()
	type place struct {
		pos  int32
		page index.BlockHash
	}
	places := func(ix *index.Index) map[index.BlockHash]place {
		out := map[index.BlockHash]place{}
		if err := ix.Export(func(bs []index.ExportedBlock) error {
			for _, x := range bs {
				out[x.Hash] = place{x.Pos, x.Page}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	pa, pb := places(a), places(b)
	if !reflect.DeepEqual(pa, pb) {
		t.Fatalf("places differ after restore (%d blocks vs %d)", len(pa), len(pb))
	}
	if a.Layout() == index.LayoutPaged {
		deep := 0
		for _, p := range pa {
			if p.pos >= index.PageSize {
				deep++
			}
		}
		if deep == 0 {
			t.Fatal("no block past the first page: the workload does not exercise pages")
		}
	}
}

// forest renders a forest canonically (the export's order depends on map
// iteration): each block with its parent's hash.
func forest(bs []eventsBlock) string {
	var rows []string
	for _, b := range bs {
		p := uint64(0)
		if b.Parent >= 0 {
			p = bs[b.Parent].Hash
		}
		b2 := b
		b2.Parent = 0
		rows = append(rows, fmtRow(b.Hash, p, b2))
	}
	sortStrings(rows)
	var buf bytes.Buffer
	for _, r := range rows {
		buf.WriteString(r)
		buf.WriteByte('\n')
	}
	return buf.String()
}

func TestRoundTripMatchesReference(t *testing.T) {
	for _, layout := range []index.Layout{index.LayoutBlock, index.LayoutPaged} {
		t.Run(string(layout), func(t *testing.T) { testRoundTrip(t, layout) })
	}
}

// testRoundTrip checks a snapshot of an index of layout against the state
// it was taken from, before and after the same continuation.
func testRoundTrip(t *testing.T, layout index.Layout) {
	id := testIdentity(t)
	id.Layout = layout
	orig := newCellStateIn(t, layout)
	w := newWorkload(1, 5)
	feed(t, w, 3000, orig)
	// A learned block must not come back: it has no learner state to
	// expire it after a restore.
	slot, _ := orig.ix.SlotOf("pod-0")
	spec := []index.BlockHash{0xabc1, 0xabc2}
	orig.l.Speculate(slot, spec, time.Now())

	data := encode(t, orig, id)
	back, snap := restore(t, data, id)
	if snap.StreamSeq != 77 || snap.CellID != testCell || !snap.Created.Equal(time.Unix(100, 5)) {
		t.Fatalf("meta: got %+v", snap.Meta)
	}
	sameState(t, "after restore", orig, back)
	samePlaces(t, orig.ix, back.ix)
	if _, ok := dumpByID(back.ix)[spec[0]]; ok {
		t.Fatal("a speculative block was restored as exact")
	}
	// Tiers survive: some block is held on the CPU.
	cpu := 0
	for _, m := range contents(t, back.ix) {
		for _, ts := range m {
			if ts.Has(index.TierCPU) {
				cpu++
			}
		}
	}
	if cpu == 0 {
		t.Fatal("no block on the CPU tier after restore: tiers were not exercised")
	}
	// The forests came back: the same continuation applied to both gives
	// the same state (removals of old blocks, stores under old parents).
	feed(t, w, 2000, orig, back)
	sameState(t, "after continuing", orig, back)
	// Every holder resumes once.
	for _, p := range w.pods {
		if _, ok := back.a.Resume(p.id, p.rank); ok {
			t.Fatalf("holder %s resumable after it applied batches", p.id)
		}
	}
}

func TestResumeReportsSavedSeq(t *testing.T) {
	id := testIdentity(t)
	orig := newCellState(t)
	w := newWorkload(2, 2)
	feed(t, w, 200, orig)
	back, _ := restore(t, encode(t, orig, id), id)
	for _, p := range w.pods {
		last, ok := back.a.Resume(p.id, p.rank)
		if !ok || last != p.seq-1 {
			t.Fatalf("Resume(%s): got %d %v, want %d true", p.id, last, ok, p.seq-1)
		}
		if _, ok := back.a.Resume(p.id, p.rank); ok {
			t.Fatalf("Resume(%s) answered twice", p.id)
		}
	}
}

func TestRefusedSnapshots(t *testing.T) {
	id := testIdentity(t)
	orig := newCellState(t)
	feed(t, newWorkload(3, 3), 300, orig)
	good := encode(t, orig, id)
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	version := bytes.Clone(good)
	binary.LittleEndian.PutUint32(version[8:], Version+1)
	other := func(f func(*Identity)) []byte {
		o := id
		f(&o)
		return encode(t, orig, o)
	}
	cases := []struct {
		name string
		data []byte
		kind error
	}{
		{"flipped body byte", flip(len(good) / 2), ErrCorrupt},
		{"flipped magic", flip(0), ErrCorrupt},
		{"flipped checksum", flip(len(good) - 10), ErrCorrupt},
		{"truncated", good[:len(good)-100], ErrCorrupt},
		{"truncated to the header", good[:12], ErrCorrupt},
		{"empty", nil, ErrCorrupt},
		{"wrong version", version, ErrVersion},
		{"foreign cell", other(func(i *Identity) { i.CellID = "cell-b" }), ErrForeign},
		{"foreign model", other(func(i *Identity) { i.Model = "other" }), ErrForeign},
		{"foreign block size", other(func(i *Identity) { i.BlockSize = 16 }), ErrForeign},
		{"foreign hash", other(func(i *Identity) { i.HashFingerprint++ }), ErrForeign},
		{"another index layout", func() []byte {
			o := newCellStateIn(t, index.LayoutPaged)
			feed(t, newWorkload(3, 3), 300, o)
			pid := id
			pid.Layout = index.LayoutPaged
			return encode(t, o, pid)
		}(), ErrForeign},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.data, id)
			if !errors.Is(err, ErrRefused) || !errors.Is(err, c.kind) {
				t.Fatalf("got %v, want %v under %v", err, c.kind, ErrRefused)
			}
		})
	}
}

func TestLoadNewestSkipsBadFiles(t *testing.T) {
	id := testIdentity(t)
	dir := t.TempDir()
	orig := newCellState(t)
	w := newWorkload(4, 2)
	feed(t, w, 100, orig)
	src := Source{Index: orig.ix, Applier: orig.a}
	t0 := time.Unix(1000, 0)
	older, _, err := WriteFile(dir, testOwner, 3, id, src, t0)
	if err != nil {
		t.Fatal(err)
	}
	feed(t, w, 100, orig)
	newer, st, err := WriteFile(dir, testOwner, 3, id, src, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(newer); err != nil || fi.Size() != st.Bytes {
		t.Fatalf("written %d bytes, file: %v %v", st.Bytes, fi, err)
	}
	// Corrupt the newer one: the older one loads, the newer is reported.
	data, _ := os.ReadFile(newer)
	data[len(data)/2] ^= 1
	if err := os.WriteFile(newer, data, 0o644); err != nil {
		t.Fatal(err)
	}
	snap, path, refused, err := LoadNewest(dir, id, 0)
	if err != nil || path != older || len(refused) != 1 || refused[0].Path != newer || !errors.Is(refused[0].Err, ErrCorrupt) {
		t.Fatalf("LoadNewest: got %q %v %v, want %q with %q refused", path, refused, err, older, newer)
	}
	if snap.Pods != 2 {
		t.Fatalf("pods: got %d, want 2", snap.Pods)
	}
	// A foreign cell's directory: nothing loads, the cell starts empty.
	other := id
	other.CellID = "cell-z"
	if _, _, refused, err := LoadNewest(dir, other, 0); !errors.Is(err, ErrNone) || len(refused) != 2 {
		t.Fatalf("foreign: got %v with %d refused, want ErrNone with 2", err, len(refused))
	}
	// Keep prunes: four more writes leave three files.
	for i := 2; i < 6; i++ {
		if _, _, err := WriteFile(dir, testOwner, 3, id, src, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := List(dir)
	if len(files) != 3 || filepath.Base(files[0]) != FileName(t0.Add(5*time.Second), testOwner) {
		t.Fatalf("after pruning: got %v, want the 3 newest", files)
	}
	if _, _, _, err := LoadNewest(filepath.Join(dir, "missing"), id, 0); !errors.Is(err, ErrNone) {
		t.Fatalf("missing dir: got %v, want ErrNone", err)
	}
}

// A file cut short anywhere is refused, never half-loaded.
func TestEveryTruncationRefused(t *testing.T) {
	id := testIdentity(t)
	orig := newCellState(t)
	feed(t, newWorkload(5, 2), 40, orig)
	good := encode(t, orig, id)
	for n := 0; n < len(good); n += 1 + len(good)/200 {
		if _, err := Decode(good[:n], id); !errors.Is(err, ErrRefused) {
			t.Fatalf("%d of %d bytes: got %v, want a refusal", n, len(good), err)
		}
	}
}
