package gossip

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"

	"github.com/hashicorp/memberlist"
)

// MaxPeerBody is the largest body SendPeers sends best effort (one UDP
// packet with memberlist's framing and encryption, inside its 1400-byte
// buffer). Reliable peer messages may carry up to MaxPeerReliableBody.
const MaxPeerBody = 1100

// MaxPeerReliableBody bounds a reliable (TCP) peer message's body.
const MaxPeerReliableBody = 1 << 20

// ErrPeerBodyTooLarge is returned by SendPeers for a body above the limit of
// its mode.
var ErrPeerBodyTooLarge = errors.New("gossip: peer message body too large")

// PeerMessage is a message between a node's peers: the other replicas of
// the same cell (same role and cell id), or the other global replicas.
// The pool only carries it; Kind and Body mean what the sender and the
// receiver agree on (the cell uses it for shared load and drains).
type PeerMessage struct {
	// From is the sender's memberlist name.
	From string
	// Cell is the sender's cell id ("" for a global replica); a receiver
	// of another cell drops the message.
	Cell string
	// Kind says what Body holds.
	Kind uint8
	// Body is the payload; it aliases nothing the pool reuses.
	Body []byte
}

// PeerReceiver is an optional interface of the Observer given to Start: it
// receives the peer messages addressed to the node. OnPeerMessage is called
// from memberlist's goroutines, possibly concurrently: it must not block or
// call back into the Node, and it owns m.
type PeerReceiver interface {
	OnPeerMessage(m PeerMessage)
}

// EncodePeer returns the wire form of m.
func EncodePeer(m *PeerMessage) []byte {
	e := newEncoder(typePeer, 16+len(m.From)+len(m.Cell)+len(m.Body))
	e.str(m.From)
	e.str(m.Cell)
	e.u8(m.Kind)
	e.blob(m.Body)
	return e.b
}

// DecodePeer parses a peer message; the body is copied out of b.
func DecodePeer(b []byte) (*PeerMessage, error) {
	d := newDecoder(b, typePeer, "peer")
	m := &PeerMessage{From: d.str("from", MaxNodeNameLen)}
	if d.err == nil && m.From == "" {
		d.fail("peer: empty sender")
	}
	m.Cell = d.str("cell", MaxCellIDLen)
	m.Kind = d.u8("kind")
	body := d.bytes("body", MaxPeerReliableBody)
	if err := d.done("peer"); err != nil {
		return nil, err
	}
	m.Body = append([]byte(nil), body...)
	return m, nil
}

// isPeer reports whether m is a peer of a node of the given role and cell:
// another live member of the same role serving the same cell.
func isPeer(m Member, self string, role Role, cell string) bool {
	return m.Name != self && m.State == StateAlive && m.Role == role && m.CellID == cell
}

// Peers returns the node's live peers (see PeerMessage), sorted by name.
func (n *Node) Peers() []Member {
	meta := n.meta.Load()
	var out []Member
	for _, m := range n.Members() {
		if isPeer(m, n.cfg.NodeName, meta.Role, meta.CellID) {
			out = append(out, m)
		}
	}
	return out
}

// SendPeers sends kind and body to every live peer and returns how many it
// reached. Best effort (reliable false) is one UDP packet per peer, fire and
// forget, for bodies up to MaxPeerBody; reliable uses a TCP exchange per peer
// (up to Config.TCPTimeout each) and reports the peers it failed to reach.
// Safe for concurrent use.
func (n *Node) SendPeers(kind uint8, body []byte, reliable bool) (int, error) {
	if n.closed.Load() {
		return 0, ErrClosed
	}
	if limit := map[bool]int{false: MaxPeerBody, true: MaxPeerReliableBody}[reliable]; len(body) > limit {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrPeerBodyTooLarge, len(body), limit)
	}
	meta := n.meta.Load()
	msg := EncodePeer(&PeerMessage{From: n.cfg.NodeName, Cell: meta.CellID, Kind: kind, Body: body})
	sent := 0
	var errs []error
	for _, p := range n.Peers() {
		to, err := nodeOf(p)
		if err == nil {
			if reliable {
				err = n.ml.Load().SendReliable(to, msg)
			} else {
				err = n.ml.Load().SendBestEffort(to, msg)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("gossip: peer %s: %w", p.Name, err))
			continue
		}
		sent++
	}
	n.stats.peerSent.Add(uint64(sent))
	return sent, errors.Join(errs...)
}

// onPeer hands a decoded peer message of this node's cell to the receiver.
func (n *Node) onPeer(m *PeerMessage) {
	meta := n.meta.Load()
	if m.From == n.cfg.NodeName || m.Cell != meta.CellID || n.peers == nil {
		return
	}
	n.stats.peerReceived.Add(1)
	n.peers.OnPeerMessage(*m)
}

// nodeOf is the memberlist address of a member.
func nodeOf(m Member) (*memberlist.Node, error) {
	host, port, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return nil, fmt.Errorf("gossip: member %s address %q: %w", m.Name, m.Addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > math.MaxUint16 {
		return nil, fmt.Errorf("gossip: member %s address %q: bad port", m.Name, m.Addr)
	}
	return &memberlist.Node{Name: m.Name, Addr: net.ParseIP(host), Port: uint16(p)}, nil
}
