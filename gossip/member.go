package gossip

import "strconv"

// State is a member's liveness as failure detection sees it.
type State uint8

// The states.
const (
	// StateAlive: the member answers probes.
	StateAlive State = iota
	// StateSuspect: a probe failed; the member has a while to refute.
	StateSuspect
	// StateDead: the member failed and did not refute, or left the pool.
	// (memberlist's event callbacks do not say which, so neither can we.)
	StateDead
)

// String returns "alive", "suspect", "dead" or "state(N)".
func (s State) String() string {
	switch s {
	case StateAlive:
		return "alive"
	case StateSuspect:
		return "suspect"
	case StateDead:
		return "dead"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Member is one node of the pool as this node sees it.
type Member struct {
	// Name is the node's memberlist name.
	Name string
	// Addr is the node's gossip address, host:port.
	Addr string
	// Role, CellID, HTTPAddr, GRPCAddr and GatewayAddr come from the node's
	// metadata; Role is 0 when the metadata did not decode.
	Role        Role
	CellID      string
	HTTPAddr    string
	GRPCAddr    string
	GatewayAddr string
	// ModelsKnown and Models are the models the node's metadata lists
	// (see NodeMeta).
	ModelsKnown bool
	Models      ModelSet
	// State is the member's liveness.
	State State
}

func memberFromMeta(name, addr string, m NodeMeta, st State) Member {
	return Member{Name: name, Addr: addr, Role: m.Role, CellID: m.CellID, HTTPAddr: m.HTTPAddr, GRPCAddr: m.GRPCAddr, GatewayAddr: m.GatewayAddr,
		ModelsKnown: m.ModelsKnown, Models: m.Models, State: st}
}
