package load

import "time"

// Op is what happened to a request's ticket.
type Op uint8

// The ops, in a ticket's order of life.
const (
	// OpStart: the request was routed to Pod with Blocks, PrefillBlocks
	// and Template.
	OpStart Op = iota + 1
	// OpFirstToken: its prefill is done.
	OpFirstToken
	// OpDone: it ended (or was cancelled) and its blocks are free.
	OpDone
	// OpLive: the ticket is still in flight, as a replica says of each of
	// its tickets every resync: it carries the sizes and template like
	// OpStart, and PrefillDone once the first token came. It starts the
	// ticket when its start was lost, marks the first token when that was
	// lost, and renews the ticket's expiry.
	OpLive
)

// Change is one change to a ticket, as a replica tells its peers. ID
// numbers the origin's tickets; only OpStart and OpLive carry the sizes
// and template, only OpLive PrefillDone.
type Change struct {
	Op            Op
	ID            uint64
	Pod           string
	Blocks        int
	PrefillBlocks int
	Template      string
	PrefillDone   bool
}

// remoteTicket is a peer's ticket: it counts in the pods' usage like a
// local one until its Done arrives, its origin is dropped, or it expires.
type remoteTicket struct {
	tk      Ticket
	expires time.Time
}

// ApplyRemote applies a change a peer replica (origin) made to one of its
// tickets, so that this tracker's usage includes the peer's requests. A
// started ticket expires at now+ttl unless a later change (first token,
// live) extends it or its Done arrives: the bound on what a lost Done or a
// silent peer can leak. A first token or done for a ticket not held (its
// start was lost, or it expired) is ignored, as is a second start of a
// held id; a live change starts a ticket not held. It reports whether the
// usage changed.
func (t *Tracker) ApplyRemote(origin string, c Change, now time.Time, ttl time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	byID := t.remote[origin]
	switch c.Op {
	case OpStart, OpLive:
		if c.Blocks < 0 || c.PrefillBlocks < 0 || c.PrefillBlocks > c.Blocks {
			return false
		}
		if byID == nil {
			byID = map[uint64]*remoteTicket{}
			t.remote[origin] = byID
		}
		rt := byID[c.ID]
		if rt != nil && c.Op == OpStart {
			return false
		}
		changed := false
		if rt == nil {
			tk := t.startLocked(c.Pod, c.Blocks, c.PrefillBlocks, c.Template)
			rt = &remoteTicket{tk: *tk}
			byID[c.ID] = rt
			changed = true
		}
		rt.expires = now.Add(ttl)
		if c.Op == OpLive && c.PrefillDone && t.firstTokenLocked(&rt.tk) {
			changed = true
		}
		return changed
	case OpFirstToken:
		rt := byID[c.ID]
		if rt == nil {
			return false
		}
		rt.expires = now.Add(ttl)
		return t.firstTokenLocked(&rt.tk)
	case OpDone:
		rt := byID[c.ID]
		if rt == nil {
			return false
		}
		delete(byID, c.ID)
		if len(byID) == 0 {
			delete(t.remote, origin)
		}
		return t.doneLocked(&rt.tk)
	}
	return false
}

// ExpireRemote frees the peers' tickets whose time ran out at now and
// returns how many.
func (t *Tracker) ExpireRemote(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for origin, byID := range t.remote {
		for id, rt := range byID {
			if now.After(rt.expires) {
				t.doneLocked(&rt.tk)
				delete(byID, id)
				n++
			}
		}
		if len(byID) == 0 {
			delete(t.remote, origin)
		}
	}
	return n
}

// DropOrigin frees every ticket of a peer (it died or left) and returns
// how many.
func (t *Tracker) DropOrigin(origin string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	byID := t.remote[origin]
	for _, rt := range byID {
		t.doneLocked(&rt.tk)
	}
	delete(t.remote, origin)
	return len(byID)
}

// RemoteTickets returns how many peer tickets the tracker holds.
func (t *Tracker) RemoteTickets() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, byID := range t.remote {
		n += len(byID)
	}
	return n
}
