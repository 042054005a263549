package gossip

import (
	"fmt"
	"net"
	"strconv"
)

// Role says what a member of the pool is.
type Role uint8

// The roles.
const (
	// RoleCell is a cell daemon (celld): it publishes a summary.
	RoleCell Role = 1
	// RoleGlobal is a global replica (globald): it consumes summaries.
	RoleGlobal Role = 2
)

// String returns "cell", "global" or "role(N)".
func (r Role) String() string {
	switch r {
	case RoleCell:
		return "cell"
	case RoleGlobal:
		return "global"
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// ParseRole parses "cell" or "global".
func ParseRole(s string) (Role, error) {
	switch s {
	case "cell":
		return RoleCell, nil
	case "global":
		return RoleGlobal, nil
	}
	return 0, fmt.Errorf("gossip: unknown role %q (want cell or global)", s)
}

func (r Role) valid() bool { return r == RoleCell || r == RoleGlobal }

// MaxMetaSize is memberlist's limit on node metadata (memberlist.MetaMaxSize).
const MaxMetaSize = 512

// NodeMeta is what a node says about itself in memberlist's node metadata.
type NodeMeta struct {
	// Role is the node's role.
	Role Role
	// CellID is the cell id (cells only; empty for global replicas).
	CellID string
	// HTTPAddr is the host:port of the node's HTTP data plane, or empty.
	HTTPAddr string
	// GRPCAddr is the host:port of the node's gRPC services, or empty.
	GRPCAddr string
	// GatewayAddr is the host:port where the cell's gateway (a Gateway API
	// implementation or Envoy that uses the cell as its endpoint picker)
	// takes requests, or empty when the cell has none. The global tier's
	// endpoint picker answers with it (see package global).
	GatewayAddr string
	// ModelsKnown says Models lists every model the cell's pods serve, so
	// that a model it does not list is one the cell cannot serve. False
	// (the cell does not know yet, or has too many to list) says nothing.
	ModelsKnown bool
	// Models are the models the cell serves.
	Models ModelSet
}

// Validate checks the role, the cell id and the addresses.
func (m NodeMeta) Validate() error {
	if !m.Role.valid() {
		return fmt.Errorf("gossip: meta: invalid role %d", m.Role)
	}
	if m.Role == RoleCell && m.CellID == "" {
		return fmt.Errorf("gossip: meta: a cell needs a cell id")
	}
	if len(m.CellID) > MaxCellIDLen {
		return fmt.Errorf("gossip: meta: cell id of %d bytes is longer than %d", len(m.CellID), MaxCellIDLen)
	}
	for _, a := range []struct{ name, v string }{{"HTTPAddr", m.HTTPAddr}, {"GRPCAddr", m.GRPCAddr}, {"GatewayAddr", m.GatewayAddr}} {
		if a.v == "" {
			continue
		}
		if len(a.v) > MaxAddrLen {
			return fmt.Errorf("gossip: meta: %s of %d bytes is longer than %d", a.name, len(a.v), MaxAddrLen)
		}
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return fmt.Errorf("gossip: meta: %s %q: %v", a.name, a.v, err)
		}
	}
	if !m.Models.valid() {
		return fmt.Errorf("gossip: meta: models are not ascending distinct 8-byte hashes")
	}
	if m.Models != "" && !m.ModelsKnown {
		return fmt.Errorf("gossip: meta: models listed but not known")
	}
	return nil
}

// Optional sections of node metadata, after the three addresses: each
// starts with its tag byte. The models section, when present, is the last.
const (
	metaModels  = 1 // the models: their count, then 8 bytes each
	metaGateway = 2 // the gateway address, length-prefixed (GatewayAddr)
)

// EncodeMeta returns the wire form of m: version, type, role, then the three
// strings length-prefixed, then the optional sections: when there is a
// gateway address, a 2 and the address; when the models are known, a 1,
// their count and each hash as 8 big-endian bytes. Without a gateway the
// bytes are those of the earlier versions, so a node that sets none is read
// by every globald; a gateway needs a globald that knows the section (one
// of this version refuses a tag it does not know, and an older one reads
// such a cell's metadata as malformed). Without models it is at most 459
// bytes (328 without a gateway), within memberlist's 512; SetModels keeps
// the whole within it.
func EncodeMeta(m NodeMeta) []byte {
	e := newEncoder(typeMeta, 20+len(m.CellID)+len(m.HTTPAddr)+len(m.GRPCAddr)+len(m.GatewayAddr)+len(m.Models))
	e.u8(byte(m.Role))
	e.str(m.CellID)
	e.str(m.HTTPAddr)
	e.str(m.GRPCAddr)
	if m.GatewayAddr != "" {
		e.u8(metaGateway)
		e.str(m.GatewayAddr)
	}
	if m.ModelsKnown {
		e.u8(metaModels)
		e.uv(uint64(m.Models.Len()))
		e.b = append(e.b, m.Models...)
	}
	return e.b
}

// DecodeMeta parses node metadata and validates it.
func DecodeMeta(b []byte) (NodeMeta, error) {
	if len(b) > MaxMetaSize {
		return NodeMeta{}, fmt.Errorf("%w: meta: %d bytes is over %d", ErrMalformed, len(b), MaxMetaSize)
	}
	d := newDecoder(b, typeMeta, "meta")
	m := NodeMeta{Role: Role(d.u8("role"))}
	m.CellID = d.str("cell id", MaxCellIDLen)
	m.HTTPAddr = d.str("http addr", MaxAddrLen)
	m.GRPCAddr = d.str("grpc addr", MaxAddrLen)
	// A node of an earlier version ends here (its models are unknown) or
	// goes on with the models; a gateway comes before them.
	if d.err == nil && d.remaining() > 0 && d.b[d.off] == metaGateway {
		d.off++
		m.GatewayAddr = d.str("gateway addr", MaxAddrLen)
		if d.err == nil && m.GatewayAddr == "" {
			d.fail("meta: empty gateway addr")
		}
	}
	if d.err == nil && d.remaining() > 0 {
		if d.u8("models flag") != metaModels && d.err == nil {
			d.fail("meta: section tag is not %d (models)", metaModels)
		}
		m.ModelsKnown = true
		n := d.uv("model count", MaxMetaSize/8)
		if d.err == nil && d.remaining() != 8*int(n) {
			d.fail("meta: %d bytes of model hashes, want %d", d.remaining(), 8*n)
		}
		if d.err == nil {
			m.Models = ModelSet(d.b[d.off:])
			d.off = len(d.b)
		}
	}
	if err := d.done("meta"); err != nil {
		return NodeMeta{}, err
	}
	if err := m.Validate(); err != nil {
		return NodeMeta{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return m, nil
}
