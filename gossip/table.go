package gossip

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// ErrUnknownCell is returned when a summary arrives for a cell that is not a
// live member of the pool (not yet joined, or already dead and removed).
var ErrUnknownCell = errors.New("gossip: unknown cell")

// Entry is what a Table knows about one cell. Entries are values; the
// Summary they point to is immutable.
type Entry struct {
	// Cell is the cell id.
	Cell string
	// Member is the cell's node as of its last join or metadata update.
	Member Member
	// Epoch and Gen name the summary held (Gen 0: none yet).
	Epoch, Gen uint64
	// Summary is the held summary, nil until the first one arrives.
	Summary *Summary
	// AnnouncedEpoch and AnnouncedGen are the newest generation a header
	// announced; the entry is behind while they are newer than Epoch, Gen.
	AnnouncedEpoch, AnnouncedGen uint64
	// Seq is the sequence number of the last header applied.
	Seq uint64
	// Load is the load of the last header applied.
	Load Load
	// UpdatedAt is when the summary last changed (zero: never).
	UpdatedAt time.Time
	// LoadUpdatedAt is when Load last changed (zero: never).
	LoadUpdatedAt time.Time
}

// Age returns how old the held summary is at now (0 when there is none).
func (e *Entry) Age(now time.Time) time.Duration {
	if e.UpdatedAt.IsZero() {
		return 0
	}
	return now.Sub(e.UpdatedAt)
}

// Behind reports whether a header announced a newer generation than held.
func (e *Entry) Behind() bool {
	return e.AnnouncedGen > 0 && newer(e.AnnouncedEpoch, e.AnnouncedGen, e.Epoch, e.Gen)
}

// Table is a global replica's (or a cell's) view of every live cell: member
// information, the latest summary and load. It assumes one node per cell id:
// a second node claiming the same id takes the entry over, and the entry
// goes when either node dies. Writers (the Node's gossip
// callbacks) serialise on a mutex and publish an immutable, sorted copy of
// all entries after each change; readers (candidate search) load it with
// one atomic read and never block.
type Table struct {
	now   func() time.Time
	mu    sync.Mutex
	cells map[string]*tableCell
	view  atomic.Pointer[[]Entry]
}

// tableCell is the mutable state behind one Entry.
type tableCell struct {
	entry     Entry
	replica   Replica
	loadEpoch uint64
}

// NewTable returns an empty table reading time from now (time.Now if nil).
func NewTable(now func() time.Time) *Table {
	if now == nil {
		now = time.Now
	}
	t := &Table{now: now, cells: make(map[string]*tableCell)}
	t.view.Store(&[]Entry{})
	return t
}

// Snapshot returns every entry sorted by cell id. The slice is shared and
// immutable: callers must not modify it. Safe for concurrent use; it
// allocates nothing.
func (t *Table) Snapshot() []Entry { return *t.view.Load() }

// Get returns the entry of cell.
func (t *Table) Get(cell string) (Entry, bool) {
	es := t.Snapshot()
	i := sort.Search(len(es), func(i int) bool { return es[i].Cell >= cell })
	if i < len(es) && es[i].Cell == cell {
		return es[i], true
	}
	return Entry{}, false
}

// Len returns the number of cells.
func (t *Table) Len() int { return len(t.Snapshot()) }

// publish rebuilds the view; t.mu must be held.
func (t *Table) publish() {
	es := make([]Entry, 0, len(t.cells))
	for _, c := range t.cells {
		es = append(es, c.entry)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Cell < es[j].Cell })
	t.view.Store(&es)
}

// SetMember adds or updates the cell that member m (of RoleCell, with a cell
// id) serves. Members of other roles are ignored.
func (t *Table) SetMember(m Member) {
	if m.Role != RoleCell || m.CellID == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.cells[m.CellID]
	if !ok {
		c = &tableCell{entry: Entry{Cell: m.CellID}, replica: Replica{Cell: m.CellID}}
		t.cells[m.CellID] = c
	}
	c.entry.Member = m
	t.publish()
}

// RemoveMember drops the cells served by the node called name, and reports
// whether there were any.
func (t *Table) RemoveMember(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	removed := false
	for id, c := range t.cells {
		if c.entry.Member.Name == name {
			delete(t.cells, id)
			removed = true
		}
	}
	if removed {
		t.publish()
	}
	return removed
}

// ApplyHeader records the load of h if h is newer than the last header
// applied, and its generation as announced, and reports whether the cell's
// summary is now behind the announced generation (the caller should fetch
// it). A header of a newer epoch than the held summary's (the cell
// restarted) drops the held summary.
func (t *Table) ApplyHeader(h *Header) (behind bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.cells[h.Cell]
	if !ok {
		return false, fmt.Errorf("%w %q", ErrUnknownCell, h.Cell)
	}
	e := &c.entry
	if newer(h.Epoch, h.Seq, c.loadEpoch, e.Seq) || e.LoadUpdatedAt.IsZero() {
		c.loadEpoch, e.Seq, e.Load, e.LoadUpdatedAt = h.Epoch, h.Seq, h.Load, t.now()
	}
	if c.replica.Gen != 0 && h.Epoch > c.replica.Epoch {
		// The cell restarted: the held summary describes its previous
		// life, so drop it rather than route on it.
		// The replica keeps the new epoch so that a stale snapshot of the
		// old one still in flight is refused.
		c.replica = Replica{Cell: h.Cell, Epoch: h.Epoch}
		e.Epoch, e.Gen, e.Summary, e.UpdatedAt = h.Epoch, 0, nil, t.now()
	}
	if newer(h.Epoch, h.Gen, e.AnnouncedEpoch, e.AnnouncedGen) {
		e.AnnouncedEpoch, e.AnnouncedGen = h.Epoch, h.Gen
	}
	t.publish()
	return e.Behind(), nil
}

// ApplySnapshot applies s to the cell's replica (see Replica.ApplySnapshot)
// and reports whether the summary changed.
func (t *Table) ApplySnapshot(s *Snapshot) (bool, error) {
	return t.apply(s.Cell, func(r *Replica) (bool, error) { return r.ApplySnapshot(s) })
}

// ApplyDelta applies d to the cell's replica (see Replica.ApplyDelta) and
// reports whether the summary changed; a *GapError means a snapshot is
// needed.
func (t *Table) ApplyDelta(d *Delta) (bool, error) {
	return t.apply(d.Cell, func(r *Replica) (bool, error) { return r.ApplyDelta(d) })
}

func (t *Table) apply(cell string, f func(*Replica) (bool, error)) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.cells[cell]
	if !ok {
		return false, fmt.Errorf("%w %q", ErrUnknownCell, cell)
	}
	changed, err := f(&c.replica)
	if !changed {
		return false, err
	}
	e := &c.entry
	e.Epoch, e.Gen, e.Summary, e.UpdatedAt = c.replica.Epoch, c.replica.Gen, c.replica.Summary, t.now()
	if newer(e.Epoch, e.Gen, e.AnnouncedEpoch, e.AnnouncedGen) {
		e.AnnouncedEpoch, e.AnnouncedGen = e.Epoch, e.Gen
	}
	t.publish()
	return true, nil
}

// ApplyCellState applies a push/pull state: its header, then its snapshot.
func (t *Table) ApplyCellState(s *CellState) error {
	if _, err := t.ApplyHeader(&s.Header); err != nil {
		return err
	}
	if s.Snapshot != nil {
		if _, err := t.ApplySnapshot(s.Snapshot); err != nil {
			return err
		}
	}
	return nil
}
