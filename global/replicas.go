package global

import (
	"log/slog"

	"github.com/cellrouter/cellrouter/gossip"
)

// peerDrains applies the cell drains a peer globald replica was given, so
// that a DrainCell issued at any replica holds at all of them. It is the
// gossip node's Observer.
type peerDrains struct {
	rt  *Router
	log *slog.Logger
}

var (
	_ gossip.Observer     = (*peerDrains)(nil)
	_ gossip.PeerReceiver = (*peerDrains)(nil)
)

// OnChange implements gossip.Observer; membership needs nothing here.
func (p *peerDrains) OnChange(gossip.Event) {}

// OnPeerMessage implements gossip.PeerReceiver.
func (p *peerDrains) OnPeerMessage(m gossip.PeerMessage) {
	if m.Kind != gossip.PeerKindDrain {
		return
	}
	d, err := gossip.DecodeDrain(m.Body)
	if err != nil || d.Cell == "" || d.Pod != "" {
		p.log.Warn("dropped a peer's drain message", "peer", m.From, "err", err)
		return
	}
	if p.rt.SetDraining(d.Cell, !d.Cancel) {
		p.log.Info("cell drain from a peer replica", "cell", d.Cell, "drain", !d.Cancel, "peer", m.From)
	}
}

// shareDrain sends a cell drain to the peer globald replicas, reliably.
func (d *Daemon) shareDrain(cell string, cancel bool) {
	n, err := d.node.SendPeers(gossip.PeerKindDrain, gossip.EncodeDrain(gossip.Drain{Cell: cell, Cancel: cancel}), true)
	if err != nil {
		d.log.Warn("cell drain not shared with every peer replica", "cell", cell, "reached", n, "err", err)
	}
}
