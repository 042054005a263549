package gossip

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// endpointKey names one replica (node) of a cell.
type endpointKey struct{ cell, node string }

// requestFetch queues a fetch of the summary that replica node of cell
// publishes ("" for the cell's first endpoint); force asks for a snapshot
// whatever this node holds. It never blocks.
func (n *Node) requestFetch(cell, node string, force bool) {
	k := endpointKey{cell, node}
	n.fetchMu.Lock()
	n.fetchPending[k] = n.fetchPending[k] || force
	n.fetchMu.Unlock()
	select {
	case n.fetchSig <- struct{}{}:
	default:
	}
}

// fetchLoop sends the queued fetch requests, one reliable (TCP) message to
// each replica saying which of its generations this node holds.
func (n *Node) fetchLoop() {
	for {
		select {
		case <-n.stop:
			return
		case <-n.fetchSig:
		}
		n.fetchMu.Lock()
		pending := n.fetchPending
		n.fetchPending = make(map[endpointKey]bool)
		n.fetchMu.Unlock()
		for k, force := range pending {
			ep, ok := n.table.endpoint(k.cell, k.node)
			if !ok {
				continue
			}
			req := &FetchRequest{From: n.cfg.NodeName, Cell: k.cell}
			if !force {
				req.Epoch, req.Gen = ep.Epoch, ep.Gen
			}
			if err := n.sendTo(ep.Member.Name, EncodeFetch(req)); err != nil {
				n.logger.Printf("[DEBUG] gossip: fetch of %s from %s: %v", k.cell, ep.Member.Name, err)
				continue
			}
			n.stats.fetchesSent.Add(1)
		}
	}
}

// serveLoop answers fetch requests with the delta or snapshot that brings
// the requester up to date.
func (n *Node) serveLoop() {
	for {
		var r *FetchRequest
		select {
		case <-n.stop:
			return
		case r = <-n.serveCh:
		}
		if n.pub == nil || r.Cell != n.pub.Cell() {
			continue
		}
		n.pubMu.Lock()
		c := n.pub.Since(r.Epoch, r.Gen)
		n.pubMu.Unlock()
		var msg []byte
		switch {
		case c.Delta != nil:
			c.Delta.Node = n.cfg.NodeName
			b, err := EncodeDelta(c.Delta)
			if err != nil {
				n.logger.Printf("[ERR] gossip: %v", err)
				continue
			}
			msg = b
		case c.Snapshot != nil:
			c.Snapshot.Node = n.cfg.NodeName
			msg = EncodeSnapshot(c.Snapshot)
		default:
			continue // up to date, or nothing published yet
		}
		if err := n.sendTo(r.From, msg); err != nil {
			n.logger.Printf("[DEBUG] gossip: answer to %s: %v", r.From, err)
			continue
		}
		n.stats.fetchesServed.Add(1)
	}
}

// resyncLoop re-queues fetches for entries still behind their announced
// generation, covering lost requests and answers.
func (n *Node) resyncLoop() {
	t := time.NewTicker(n.cfg.ResyncInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		for _, e := range n.table.Snapshot() {
			for _, ep := range e.Endpoints {
				if ep.Behind() {
					n.requestFetch(e.Cell, ep.Member.Name, false)
				}
			}
		}
	}
}

// sendTo sends msg reliably to the live member called name. The address
// comes from the node's own member record (copied in memberlist's event
// callbacks): the *memberlist.Node values Members returns are memberlist's
// own, updated in place under its lock, so reading their fields here would
// race with it.
func (n *Node) sendTo(name string, msg []byte) error {
	n.mu.Lock()
	rec := n.members[name]
	var addr string
	alive := false
	if rec != nil {
		addr, alive = rec.m.Addr, rec.m.State == StateAlive
	}
	n.mu.Unlock()
	if !alive {
		return ErrUnknownMember
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gossip: member %s address %q: %w", name, addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("gossip: member %s address %q: %w", name, addr, err)
	}
	to := &memberlist.Node{Name: name, Addr: net.ParseIP(host), Port: uint16(p)}
	return n.ml.Load().SendReliable(to, msg)
}
