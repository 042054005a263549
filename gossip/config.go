package gossip

import (
	"encoding/base64"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"time"
)

// Config configures a Node. Start it from DefaultConfig and set at least
// NodeName, Role and, for a cell, CellID.
type Config struct {
	// NodeName is the node's unique name in the pool (default: the host
	// name). At most MaxNodeNameLen bytes.
	NodeName string
	// BindAddr is the address memberlist listens on for gossip (UDP) and
	// push/pull and reliable messages (TCP), for example "0.0.0.0".
	BindAddr string
	// BindPort is the gossip port; 0 picks a free port (see Node.Addr).
	BindPort int
	// AdvertiseAddr is the address other nodes use to reach this one; empty
	// means memberlist picks one from BindAddr or the interfaces.
	AdvertiseAddr string
	// AdvertisePort is the port other nodes use; 0 means the bound port.
	AdvertisePort int
	// Seeds are host:port addresses of existing members that Start joins;
	// empty starts a new pool (the first node), and Join can be called later.
	Seeds []string
	// SecretKey, when set, encrypts all gossip with AES-GCM; it must be 16,
	// 24 or 32 bytes and the same on every member. A node with another key
	// cannot join.
	SecretKey []byte
	// ExtraKeys are further keys accepted for decryption (for key rotation);
	// they require SecretKey, which stays the key used to encrypt.
	ExtraKeys [][]byte
	// GossipInterval is how often a node sends queued broadcasts (summary
	// headers) to GossipNodes random members.
	GossipInterval time.Duration
	// GossipNodes is how many random members each gossip round reaches.
	GossipNodes int
	// ProbeInterval is the SWIM failure-detection probe period.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for an ack; below ProbeInterval.
	ProbeTimeout time.Duration
	// SuspicionMult scales how long a suspect member has to refute before it
	// is declared dead (SuspicionMult * log10(N) * ProbeInterval, at least
	// SuspicionMult * ProbeInterval).
	SuspicionMult int
	// PushPullInterval is how often a node exchanges full state (members and
	// the cell's latest summary snapshot) with one random member over TCP:
	// the anti-entropy path that repairs anything gossip missed.
	PushPullInterval time.Duration
	// TCPTimeout bounds one TCP exchange (push/pull, reliable message).
	TCPTimeout time.Duration
	// Role is RoleCell or RoleGlobal.
	Role Role
	// CellID is the cell's id (required for RoleCell, at most MaxCellIDLen
	// bytes); it keys the cell's entry in every Table.
	CellID string
	// HTTPAddr is the host:port of this node's HTTP data plane, advertised
	// in its metadata; may be empty.
	HTTPAddr string
	// GRPCAddr is the host:port of this node's gRPC services, advertised in
	// its metadata; may be empty.
	GRPCAddr string
	// GatewayAddr is the host:port of the gateway that uses this cell as
	// its endpoint picker, advertised in its metadata (NodeMeta.GatewayAddr);
	// may be empty.
	GatewayAddr string
	// LeaveTimeout bounds the leave broadcast made by Shutdown.
	LeaveTimeout time.Duration
	// ResyncInterval is how often a node re-asks for summaries it knows are
	// behind the generation a header announced (a lost fetch or answer).
	ResyncInterval time.Duration
	// DeadRetention is how long Members keeps reporting a dead or departed
	// member before forgetting it.
	DeadRetention time.Duration
	// JoinInBackground makes Start return without waiting for Seeds: the
	// rejoin loop joins them at once and then retries as below, so a seed
	// that is not up yet does not stop the node. The daemons set it.
	JoinInBackground bool
	// RejoinInterval is how often the rejoin loop looks for configured
	// seeds and remembered members that are not in the pool and joins
	// them (with a fifth of jitter either way). A node restarted without
	// seeds is found again this way by the members that had it as a seed
	// or remember it. Default 5s.
	RejoinInterval time.Duration
	// RejoinMaxInterval caps the loop's backoff: a round that reaches
	// fewer than all its targets doubles the wait up to this. Default 1m.
	RejoinMaxInterval time.Duration
	// RememberMembers bounds how many departed (dead or left) members'
	// last addresses the rejoin loop keeps knocking at, the oldest
	// forgotten first; 0 remembers none. Default 64.
	RememberMembers int
	// RememberFor is how long a departed member is knocked at before it
	// is forgotten. Default 30m. (An address a node of another pool took
	// over meanwhile would be joined, as a seed's would: encrypt the pool,
	// and another pool's node cannot join.)
	RememberFor time.Duration
	// Logger receives memberlist's and this package's logs; nil discards.
	Logger *log.Logger
}

// DefaultConfig returns settings for a LAN or one cloud region: memberlist's
// LAN timings, a 15 s push/pull, port 7946 on all interfaces, role global.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		NodeName:         host,
		BindAddr:         "0.0.0.0",
		BindPort:         7946,
		GossipInterval:   200 * time.Millisecond,
		GossipNodes:      3,
		ProbeInterval:    time.Second,
		ProbeTimeout:     500 * time.Millisecond,
		SuspicionMult:    4,
		PushPullInterval: 15 * time.Second,
		TCPTimeout:       10 * time.Second,
		Role:             RoleGlobal,
		LeaveTimeout:     5 * time.Second,
		ResyncInterval:   2 * time.Second,
		DeadRetention:    time.Minute,

		RejoinInterval:    5 * time.Second,
		RejoinMaxInterval: time.Minute,
		RememberMembers:   64,
		RememberFor:       30 * time.Minute,
	}
}

// Validate names the first field that is missing or out of range.
func (c Config) Validate() error {
	switch {
	case c.NodeName == "" || len(c.NodeName) > MaxNodeNameLen:
		return fmt.Errorf("gossip: Config.NodeName %q is empty or longer than %d bytes", c.NodeName, MaxNodeNameLen)
	case c.BindAddr == "":
		return fmt.Errorf("gossip: Config.BindAddr is empty")
	case c.BindPort < 0 || c.BindPort > 65535:
		return fmt.Errorf("gossip: Config.BindPort %d is not in [0, 65535]", c.BindPort)
	case c.AdvertisePort < 0 || c.AdvertisePort > 65535:
		return fmt.Errorf("gossip: Config.AdvertisePort %d is not in [0, 65535]", c.AdvertisePort)
	case c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil:
		return fmt.Errorf("gossip: Config.AdvertiseAddr %q is not an IP address", c.AdvertiseAddr)
	case len(c.ExtraKeys) > 0 && len(c.SecretKey) == 0:
		return fmt.Errorf("gossip: Config.ExtraKeys needs Config.SecretKey")
	case c.GossipInterval <= 0:
		return fmt.Errorf("gossip: Config.GossipInterval %v is not positive", c.GossipInterval)
	case c.GossipNodes < 1:
		return fmt.Errorf("gossip: Config.GossipNodes %d is below 1", c.GossipNodes)
	case c.ProbeInterval <= 0:
		return fmt.Errorf("gossip: Config.ProbeInterval %v is not positive", c.ProbeInterval)
	case c.ProbeTimeout <= 0 || c.ProbeTimeout >= c.ProbeInterval:
		return fmt.Errorf("gossip: Config.ProbeTimeout %v is not in (0, ProbeInterval %v)", c.ProbeTimeout, c.ProbeInterval)
	case c.SuspicionMult < 1:
		return fmt.Errorf("gossip: Config.SuspicionMult %d is below 1", c.SuspicionMult)
	case c.PushPullInterval <= 0:
		return fmt.Errorf("gossip: Config.PushPullInterval %v is not positive", c.PushPullInterval)
	case c.TCPTimeout <= 0:
		return fmt.Errorf("gossip: Config.TCPTimeout %v is not positive", c.TCPTimeout)
	case c.LeaveTimeout <= 0:
		return fmt.Errorf("gossip: Config.LeaveTimeout %v is not positive", c.LeaveTimeout)
	case c.ResyncInterval <= 0:
		return fmt.Errorf("gossip: Config.ResyncInterval %v is not positive", c.ResyncInterval)
	case c.DeadRetention < 0:
		return fmt.Errorf("gossip: Config.DeadRetention %v is negative", c.DeadRetention)
	case c.RejoinInterval <= 0:
		return fmt.Errorf("gossip: Config.RejoinInterval %v is not positive", c.RejoinInterval)
	case c.RejoinMaxInterval < c.RejoinInterval:
		return fmt.Errorf("gossip: Config.RejoinMaxInterval %v is below RejoinInterval %v", c.RejoinMaxInterval, c.RejoinInterval)
	case c.RememberMembers < 0:
		return fmt.Errorf("gossip: Config.RememberMembers %d is negative", c.RememberMembers)
	case c.RememberFor < 0:
		return fmt.Errorf("gossip: Config.RememberFor %v is negative", c.RememberFor)
	}
	for i, k := range append([][]byte{c.SecretKey}, c.ExtraKeys...) {
		if i == 0 && len(k) == 0 {
			continue
		}
		if l := len(k); l != 16 && l != 24 && l != 32 {
			if i == 0 {
				return fmt.Errorf("gossip: Config.SecretKey is %d bytes, want 16, 24 or 32", l)
			}
			return fmt.Errorf("gossip: Config.ExtraKeys[%d] is %d bytes, want 16, 24 or 32", i-1, l)
		}
	}
	for i, s := range c.Seeds {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return fmt.Errorf("gossip: Config.Seeds[%d] %q: %v", i, s, err)
		}
	}
	if !c.Role.valid() {
		return fmt.Errorf("gossip: Config.Role %d is neither RoleCell nor RoleGlobal", c.Role)
	}
	if err := c.meta().Validate(); err != nil {
		return fmt.Errorf("gossip: Config: %w", err)
	}
	if n := len(EncodeMeta(c.meta())); n > MaxMetaSize {
		return fmt.Errorf("gossip: Config: node metadata is %d bytes, over %d", n, MaxMetaSize)
	}
	return nil
}

// meta returns the node metadata the config advertises.
func (c Config) meta() NodeMeta {
	return NodeMeta{Role: c.Role, CellID: c.CellID, HTTPAddr: c.HTTPAddr, GRPCAddr: c.GRPCAddr, GatewayAddr: c.GatewayAddr}
}

// SetAddrs fills BindAddr/BindPort from bind (host:port, an empty host
// meaning every interface, as in Go's ":7946"; port 0 picks one),
// AdvertiseAddr/AdvertisePort from advertise (optional, host:port) and
// SecretKey from secretKey (base64 of 16, 24 or 32 bytes; empty for an
// unencrypted pool): the form the daemons' configurations take. Errors
// name the setting.
func (c *Config) SetAddrs(bind, advertise, secretKey string) error {
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return fmt.Errorf("gossip: bind %q: %v", bind, err)
	}
	if c.BindPort, err = strconv.Atoi(port); err != nil {
		return fmt.Errorf("gossip: bind %q: bad port", bind)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	c.BindAddr = host
	if advertise != "" {
		ah, ap, err := net.SplitHostPort(advertise)
		if err != nil {
			return fmt.Errorf("gossip: advertise %q: %v", advertise, err)
		}
		if c.AdvertisePort, err = strconv.Atoi(ap); err != nil {
			return fmt.Errorf("gossip: advertise %q: bad port", advertise)
		}
		c.AdvertiseAddr = ah
	}
	if secretKey != "" {
		if c.SecretKey, err = base64.StdEncoding.DecodeString(secretKey); err != nil {
			return fmt.Errorf("gossip: secret key: not base64: %v", err)
		}
	}
	return nil
}

// ApplyRejoin sets the rejoin settings the daemons' configurations carry,
// a zero keeping the default (and a negative remember count remembering
// no member).
func (c *Config) ApplyRejoin(interval, maxInterval time.Duration, remember int, rememberFor time.Duration) {
	if interval > 0 {
		c.RejoinInterval = interval
	}
	if maxInterval > 0 {
		c.RejoinMaxInterval = maxInterval
	}
	if remember > 0 {
		c.RememberMembers = remember
	} else if remember < 0 {
		c.RememberMembers = 0
	}
	if rememberFor > 0 {
		c.RememberFor = rememberFor
	}
}
