package gossip

import (
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate implements memberlist.Delegate for a Node. memberlist calls it
// from its own goroutines, some under its internal locks: it never calls
// back into memberlist and never blocks on the network.
type delegate struct{ n *Node }

var _ memberlist.Delegate = (*delegate)(nil)

// NodeMeta returns the encoded NodeMeta (validated at Start, and by
// SetModels, to fit limit).
func (d *delegate) NodeMeta(limit int) []byte { return EncodeMeta(*d.n.meta.Load()) }

// NotifyMsg handles a user message: a header (gossip), a fetch request, or a
// snapshot or delta answering one (reliable, TCP). buf is reused by
// memberlist after the call, so everything kept is decoded into new memory.
func (d *delegate) NotifyMsg(buf []byte) {
	n := d.n
	typ, err := messageType(buf)
	if err != nil {
		n.stats.dropped.Add(1)
		n.logger.Printf("[WARN] gossip: dropped message: %v", err)
		return
	}
	switch typ {
	case typeHeader:
		h, err := DecodeHeader(buf)
		if err != nil {
			n.stats.dropped.Add(1)
			n.logger.Printf("[WARN] gossip: dropped header: %v", err)
			return
		}
		n.onHeader(h)
	case typeFetch:
		r, err := DecodeFetch(buf)
		if err != nil {
			n.stats.dropped.Add(1)
			n.logger.Printf("[WARN] gossip: dropped fetch: %v", err)
			return
		}
		select {
		case n.serveCh <- r:
		default:
			// The requester retries on its resync tick.
			n.logger.Printf("[WARN] gossip: fetch queue full, dropped request of %s", r.From)
		}
	case typeSnapshot:
		s, err := DecodeSnapshot(buf)
		if err != nil {
			n.stats.dropped.Add(1)
			n.logger.Printf("[WARN] gossip: dropped snapshot: %v", err)
			return
		}
		changed, err := n.table.ApplySnapshot(s)
		if err != nil {
			n.logger.Printf("[DEBUG] gossip: snapshot of %s not applied: %v", s.Cell, err)
		}
		if changed {
			n.stats.snapshots.Add(1)
		}
	case typeDelta:
		x, err := DecodeDelta(buf)
		if err != nil {
			n.stats.dropped.Add(1)
			n.logger.Printf("[WARN] gossip: dropped delta: %v", err)
			return
		}
		changed, err := n.table.ApplyDelta(x)
		if changed {
			n.stats.deltas.Add(1)
		}
		if err != nil {
			if errors.Is(err, ErrNeedSnapshot) {
				n.stats.gaps.Add(1)
				n.requestFetch(x.Cell, x.Node, true)
			}
			n.logger.Printf("[DEBUG] gossip: delta of %s not applied: %v", x.Cell, err)
		}
	case typeBands:
		b, err := DecodeBandLoad(buf)
		if err != nil {
			n.stats.dropped.Add(1)
			n.logger.Printf("[WARN] gossip: dropped bands: %v", err)
			return
		}
		if n.pub != nil && b.Cell == n.pub.Cell() {
			return
		}
		if err := n.table.ApplyBands(b); err != nil {
			n.logger.Printf("[DEBUG] gossip: bands of %s not applied: %v", b.Cell, err)
		}
	case typePeer:
		m, err := DecodePeer(buf)
		if err != nil {
			n.stats.dropped.Add(1)
			n.logger.Printf("[WARN] gossip: dropped peer message: %v", err)
			return
		}
		n.onPeer(m)
	default:
		n.logger.Printf("[WARN] gossip: dropped message of unknown type %d", typ)
	}
}

// GetBroadcasts hands queued headers to memberlist's gossip.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.n.bq.GetBroadcasts(overhead, limit)
}

// LocalState returns, on a cell, its latest header and snapshot for
// memberlist's push/pull exchange; other roles have no state to share.
func (d *delegate) LocalState(join bool) []byte {
	n := d.n
	if n.pub == nil {
		return nil
	}
	n.pubMu.Lock()
	st := &CellState{Header: *n.currentHeaderLocked(), Snapshot: n.pub.Snapshot()}
	n.pubMu.Unlock()
	if st.Snapshot != nil {
		st.Snapshot.Node = n.cfg.NodeName
	}
	// The snapshot's bits belong to an immutable Summary, so encoding
	// outside the lock is safe.
	return EncodeCellState(st)
}

// MergeRemoteState applies a peer cell's push/pull state to the table.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {
	if len(buf) == 0 {
		return
	}
	n := d.n
	st, err := DecodeCellState(buf)
	if err != nil {
		n.stats.dropped.Add(1)
		n.logger.Printf("[WARN] gossip: dropped push/pull state: %v", err)
		return
	}
	if n.pub != nil && st.Header.Cell == n.pub.Cell() {
		return
	}
	before, _ := n.table.Get(st.Header.Cell)
	if err := n.table.ApplyCellState(st); err != nil {
		n.logger.Printf("[DEBUG] gossip: push/pull state of %s not applied: %v", st.Header.Cell, err)
		return
	}
	n.stats.headers.Add(1)
	if after, _ := n.table.Get(st.Header.Cell); after.Summary != before.Summary {
		n.stats.snapshots.Add(1)
	}
}

// onHeader applies a header and asks for the summary when behind.
func (n *Node) onHeader(h *Header) {
	if n.pub != nil && h.Cell == n.pub.Cell() {
		return
	}
	behind, err := n.table.ApplyHeader(h)
	if err != nil {
		n.logger.Printf("[DEBUG] gossip: header of %s not applied: %v", h.Cell, err)
		return
	}
	n.stats.headers.Add(1)
	if behind {
		n.requestFetch(h.Cell, h.Node, false)
	}
}

// eventDelegate implements memberlist.EventDelegate: it keeps the member map
// and the table's cells in step with membership and queues Events. It runs
// under memberlist's node lock, so it only touches this package's state.
type eventDelegate struct{ n *Node }

var _ memberlist.EventDelegate = (*eventDelegate)(nil)

func (e *eventDelegate) member(node *memberlist.Node) Member {
	meta, err := DecodeMeta(node.Meta)
	if err != nil {
		e.n.logger.Printf("[WARN] gossip: member %s has bad metadata: %v", node.Name, err)
	}
	addr := net.JoinHostPort(node.Addr.String(), strconv.Itoa(int(node.Port)))
	// node.State is not maintained by memberlist for the nodes it hands to
	// event callbacks; each callback sets the state it implies.
	return memberFromMeta(node.Name, addr, meta, StateAlive)
}

func (e *eventDelegate) record(m Member) {
	n := e.n
	now := time.Now()
	n.mu.Lock()
	n.members[m.Name] = &memberRecord{m: m, since: now}
	if m.State == StateDead {
		n.rememberLocked(m, now)
	} else {
		n.forgetLocked(m.Name)
	}
	n.mu.Unlock()
}

// NotifyJoin records a new member and, for a peer cell, asks for its
// summary right away rather than waiting for its next header.
func (e *eventDelegate) NotifyJoin(node *memberlist.Node) {
	m := e.member(node)
	m.State = StateAlive
	e.record(m)
	if m.Name != e.n.cfg.NodeName && m.Role == RoleCell {
		if e.n.table.SetMember(m) {
			e.n.requestFetch(m.CellID, m.Name, false)
		}
	}
	e.n.events.push(Event{Kind: EventJoin, Member: m})
}

// NotifyLeave records a member as dead (it failed or left) and drops its
// cell.
func (e *eventDelegate) NotifyLeave(node *memberlist.Node) {
	m := e.member(node)
	m.State = StateDead
	e.record(m)
	e.n.table.RemoveMember(m.Name)
	e.n.events.push(Event{Kind: EventLeave, Member: m})
}

// NotifyUpdate records new metadata.
func (e *eventDelegate) NotifyUpdate(node *memberlist.Node) {
	m := e.member(node)
	e.record(m)
	if m.Name != e.n.cfg.NodeName {
		e.n.table.SetMember(m)
	}
	e.n.events.push(Event{Kind: EventUpdate, Member: m})
}

// headerBroadcast is a queued header; a newer header of the same cell
// replaces it in the queue.
type headerBroadcast struct {
	cell string
	msg  []byte
}

var _ memberlist.NamedBroadcast = (*headerBroadcast)(nil)

// Invalidates reports whether b is an older header of the same cell.
func (h *headerBroadcast) Invalidates(b memberlist.Broadcast) bool {
	o, ok := b.(*headerBroadcast)
	return ok && o.cell == h.cell
}

// Name keys the broadcast by cell for the queue's fast invalidation.
func (h *headerBroadcast) Name() string { return "header/" + h.cell }

// Message returns the encoded header.
func (h *headerBroadcast) Message() []byte { return h.msg }

// Finished is a no-op.
func (h *headerBroadcast) Finished() {}
