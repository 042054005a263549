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
// live member of the pool (not yet joined, or already dead and removed), or
// from a replica of it that is not.
var ErrUnknownCell = errors.New("gossip: unknown cell")

// Endpoint is one live replica of a cell: a node serving the cell id, with
// the summary generation and load it published. Endpoints are values.
type Endpoint struct {
	// Member is the replica's node as of its last join or metadata update.
	Member Member
	// Epoch and Gen name the replica's summary held (Gen 0: none yet).
	Epoch, Gen uint64
	// AnnouncedEpoch and AnnouncedGen are the newest generation the
	// replica's headers announced.
	AnnouncedEpoch, AnnouncedGen uint64
	// Seq is the sequence number of the replica's last header applied.
	Seq uint64
	// Load is the replica's load as of that header.
	Load Load
	// UpdatedAt is when the replica's summary last changed; LoadUpdatedAt
	// when its load did (zero: never).
	UpdatedAt, LoadUpdatedAt time.Time
	// BandsUpdatedAt is when Load.Waits last came in a bands message
	// (zero: never; the waits are then zero).
	BandsUpdatedAt time.Time
}

// loadHeard is when the replica's load (a header or a bands message) last
// came in.
func (e *Endpoint) loadHeard() time.Time {
	if e.BandsUpdatedAt.After(e.LoadUpdatedAt) {
		return e.BandsUpdatedAt
	}
	return e.LoadUpdatedAt
}

// Behind reports whether the replica announced a newer generation than held.
func (e *Endpoint) Behind() bool {
	return e.AnnouncedGen > 0 && newer(e.AnnouncedEpoch, e.AnnouncedGen, e.Epoch, e.Gen)
}

// Entry is what a Table knows about one cell: its live endpoints (one per
// replica) and one summary and load for the cell as a whole. Replicas of a
// cell consume the same events and hold the same index, so any one's
// summary describes the cell: the entry takes the most recently updated
// replica's (its source, Member). Entries are values; the Summary they
// point to is immutable.
type Entry struct {
	// Cell is the cell id.
	Cell string
	// Member is the replica whose summary the entry holds (before any
	// summary arrived, the first endpoint).
	Member Member
	// Endpoints are the cell's live replicas sorted by node name; never
	// empty (a cell with no live replica leaves the table).
	Endpoints []Endpoint
	// Epoch and Gen name the summary held (Gen 0: none yet), Member's.
	Epoch, Gen uint64
	// Summary is the held summary, nil until the first one arrives.
	Summary *Summary
	// AnnouncedEpoch and AnnouncedGen are the newest generation Member's
	// headers announced; the entry is behind while they are newer than
	// Epoch, Gen.
	AnnouncedEpoch, AnnouncedGen uint64
	// Seq is the sequence number of the last header applied of the replica
	// whose load the entry holds.
	Seq uint64
	// Load is the cell's load: that of the replica heard from last (the
	// replicas share their load, so they agree).
	Load Load
	// UpdatedAt is when the summary last changed (zero: never).
	UpdatedAt time.Time
	// LoadUpdatedAt is when Load last changed (zero: never).
	LoadUpdatedAt time.Time
	// BandsUpdatedAt is when Load.Waits last changed (zero: never), so a
	// reader can ignore waits a cell stopped refreshing.
	BandsUpdatedAt time.Time
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

// Table is a global replica's (or a cell's) view of every live cell: its
// endpoints, the latest summary and load. Each node serving a cell id is an
// endpoint of that cell, with its own summary generations (each replica
// publishes its own, under its own epoch); a replica's death removes its
// endpoint only, and the cell leaves the table with its last endpoint.
// Writers (the Node's gossip callbacks) serialise on a mutex and publish an
// immutable, sorted copy of all entries after each change; readers
// (candidate search) load it with one atomic read and never block.
type Table struct {
	now   func() time.Time
	self  string // the owning node's cell id: its replicas are not peers cells
	mu    sync.Mutex
	cells map[string]*tableCell
	view  atomic.Pointer[[]Entry]
}

// tableCell is the mutable state behind one Entry: its endpoints by node
// name.
type tableCell struct {
	eps map[string]*tableEndpoint
}

// tableEndpoint is the mutable state behind one Endpoint.
type tableEndpoint struct {
	ep        Endpoint
	replica   Replica
	loadEpoch uint64
	// bandEpoch and bandSeq order the bands messages applied.
	bandEpoch, bandSeq uint64
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
	for id, c := range t.cells {
		es = append(es, c.entry(id))
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Cell < es[j].Cell })
	t.view.Store(&es)
}

// entry merges the cell's endpoints into one Entry: the summary of the
// replica whose summary changed last, the load heard last.
func (c *tableCell) entry(id string) Entry {
	e := Entry{Cell: id, Endpoints: make([]Endpoint, 0, len(c.eps))}
	var src, ld *tableEndpoint
	for _, te := range c.eps {
		e.Endpoints = append(e.Endpoints, te.ep)
		if te.replica.Summary != nil && (src == nil || te.ep.UpdatedAt.After(src.ep.UpdatedAt) ||
			(te.ep.UpdatedAt.Equal(src.ep.UpdatedAt) && te.ep.Member.Name < src.ep.Member.Name)) {
			src = te
		}
		if h := te.ep.loadHeard(); !h.IsZero() && (ld == nil || h.After(ld.ep.loadHeard()) ||
			(h.Equal(ld.ep.loadHeard()) && te.ep.Member.Name < ld.ep.Member.Name)) {
			ld = te
		}
	}
	sort.Slice(e.Endpoints, func(i, j int) bool { return e.Endpoints[i].Member.Name < e.Endpoints[j].Member.Name })
	if src == nil {
		src = c.eps[e.Endpoints[0].Member.Name]
	}
	s := &src.ep
	e.Member, e.Epoch, e.Gen, e.Summary, e.UpdatedAt = s.Member, s.Epoch, s.Gen, src.replica.Summary, s.UpdatedAt
	e.AnnouncedEpoch, e.AnnouncedGen = s.AnnouncedEpoch, s.AnnouncedGen
	if ld != nil {
		e.Seq, e.Load, e.LoadUpdatedAt, e.BandsUpdatedAt = ld.ep.Seq, ld.ep.Load, ld.ep.LoadUpdatedAt, ld.ep.BandsUpdatedAt
	}
	return e
}

// SetMember adds or updates the endpoint that member m (of RoleCell, with a
// cell id) is, and reports whether it is new. Members of other roles, and
// the replicas of the table owner's own cell, are ignored.
func (t *Table) SetMember(m Member) bool {
	if m.Role != RoleCell || m.CellID == "" || m.CellID == t.self {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.cells[m.CellID]
	if !ok {
		c = &tableCell{eps: map[string]*tableEndpoint{}}
		t.cells[m.CellID] = c
	}
	te, ok := c.eps[m.Name]
	if !ok {
		te = &tableEndpoint{replica: Replica{Cell: m.CellID}}
		c.eps[m.Name] = te
	}
	te.ep.Member = m
	t.publish()
	return !ok
}

// RemoveMember drops the endpoint of the node called name (its cell goes
// with its last endpoint), and reports whether there was one.
func (t *Table) RemoveMember(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	removed := false
	for id, c := range t.cells {
		if _, ok := c.eps[name]; ok {
			delete(c.eps, name)
			removed = true
			if len(c.eps) == 0 {
				delete(t.cells, id)
			}
		}
	}
	if removed {
		t.publish()
	}
	return removed
}

// lookup returns the endpoint node of cell ("" for its first endpoint by
// name); t.mu must be held.
func (t *Table) lookup(cell, node string) (*tableEndpoint, error) {
	c, ok := t.cells[cell]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownCell, cell)
	}
	if node != "" {
		if te, ok := c.eps[node]; ok {
			return te, nil
		}
		return nil, fmt.Errorf("%w %q: no live replica %q", ErrUnknownCell, cell, node)
	}
	var first *tableEndpoint
	for name, te := range c.eps {
		if first == nil || name < first.ep.Member.Name {
			first = te
		}
	}
	return first, nil
}

// endpoint returns a copy of the endpoint node of cell ("": the first).
func (t *Table) endpoint(cell, node string) (Endpoint, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	te, err := t.lookup(cell, node)
	if err != nil {
		return Endpoint{}, false
	}
	return te.ep, true
}

// ApplyHeader records the load of h if h is newer than the last header
// applied from its replica, and its generation as announced, and reports
// whether that replica's summary is now behind the announced generation
// (the caller should fetch it from h.Node). A header of a newer epoch than
// the replica's held summary (the replica restarted) drops that summary.
func (t *Table) ApplyHeader(h *Header) (behind bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	te, err := t.lookup(h.Cell, h.Node)
	if err != nil {
		return false, err
	}
	e := &te.ep
	if newer(h.Epoch, h.Seq, te.loadEpoch, e.Seq) || e.LoadUpdatedAt.IsZero() {
		// The header does not carry the band waits (a bands message
		// does): keep the last ones.
		waits := e.Load.Waits
		te.loadEpoch, e.Seq, e.Load, e.LoadUpdatedAt = h.Epoch, h.Seq, h.Load, t.now()
		e.Load.Waits = waits
	}
	if h.Epoch > te.bandEpoch && !e.BandsUpdatedAt.IsZero() {
		// The replica restarted: its flow control starts empty, and a
		// bands message of the new life says otherwise.
		te.bandEpoch, te.bandSeq, e.Load.Waits, e.BandsUpdatedAt = h.Epoch, 0, BandWaits{}, t.now()
	}
	if te.replica.Gen != 0 && h.Epoch > te.replica.Epoch {
		// The replica restarted: the held summary describes its previous
		// life, so drop it rather than route on it.
		// The replica keeps the new epoch so that a stale snapshot of the
		// old one still in flight is refused.
		te.replica = Replica{Cell: h.Cell, Epoch: h.Epoch}
		e.Epoch, e.Gen, e.UpdatedAt = h.Epoch, 0, t.now()
	}
	if newer(h.Epoch, h.Gen, e.AnnouncedEpoch, e.AnnouncedGen) {
		e.AnnouncedEpoch, e.AnnouncedGen = h.Epoch, h.Gen
	}
	t.publish()
	return e.Behind(), nil
}

// ApplySnapshot applies s to its replica's state (see
// Replica.ApplySnapshot) and reports whether the summary changed.
func (t *Table) ApplySnapshot(s *Snapshot) (bool, error) {
	return t.apply(s.Cell, s.Node, func(r *Replica) (bool, error) { return r.ApplySnapshot(s) })
}

// ApplyDelta applies d to its replica's state (see Replica.ApplyDelta) and
// reports whether the summary changed; a *GapError means a snapshot is
// needed.
func (t *Table) ApplyDelta(d *Delta) (bool, error) {
	return t.apply(d.Cell, d.Node, func(r *Replica) (bool, error) { return r.ApplyDelta(d) })
}

func (t *Table) apply(cell, node string, f func(*Replica) (bool, error)) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	te, err := t.lookup(cell, node)
	if err != nil {
		return false, err
	}
	changed, err := f(&te.replica)
	if !changed {
		return false, err
	}
	e := &te.ep
	e.Epoch, e.Gen, e.UpdatedAt = te.replica.Epoch, te.replica.Gen, t.now()
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
