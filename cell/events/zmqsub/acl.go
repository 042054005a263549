package zmqsub

import (
	"context"
	"net"
	"net/netip"

	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

// Who may publish on the Bind socket.
//
// ZMQ has no authentication of its own (without CURVE, which vLLM and
// SGLang do not configure), and zmq4 hands a SUB socket's messages over
// without saying which connection brought them. The one place a source
// address is known is where the connection is accepted: zmq4 asks the
// transport of the socket's scheme to Listen, with the socket's context,
// and accepts connections from the listener it returns. The Subscriber's
// own transport (transport.go) reads a sourceFilter from that context and
// wraps the listener in a filteredListener, which closes a connection from
// a source outside Config.AllowedSources as soon as it is accepted, before
// the ZMTP greeting: a refused publisher never gets a message through.
// The topic filter (Config.KnownPod) then limits what an allowed source
// may publish to the pods the cell knows.

// sourceFilter decides the connections of one Bind socket.
type sourceFilter struct {
	allowed []netip.Prefix
	// refused is told about each connection closed; it must be quick.
	refused func(remote net.Addr)
}

// allows reports whether a connection from remote may stay: its address
// (IPv4-mapped IPv6 addresses count as IPv4) is in an allowed network.
func (f *sourceFilter) allows(remote net.Addr) bool {
	ip, ok := addrOf(remote)
	if !ok {
		return false
	}
	for _, p := range f.allowed {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// addrOf returns the IP address of a connection's remote end.
func addrOf(a net.Addr) (netip.Addr, bool) {
	if t, ok := a.(*net.TCPAddr); ok {
		ip, ok := netip.AddrFromSlice(t.IP)
		return ip.Unmap(), ok
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

type sourceFilterKey struct{}

// withSourceFilter returns ctx carrying f for the transport's Listen.
func withSourceFilter(ctx context.Context, f *sourceFilter) context.Context {
	return context.WithValue(ctx, sourceFilterKey{}, f)
}

// sourceFilterFrom returns the filter ctx carries, nil for none.
func sourceFilterFrom(ctx context.Context) *sourceFilter {
	f, _ := ctx.Value(sourceFilterKey{}).(*sourceFilter)
	return f
}

// filteredListener accepts only the connections its filter allows; the
// others are closed and reported, and Accept waits for the next one (zmq4
// retries at once after an Accept error, so refusing must not be one).
type filteredListener struct {
	net.Listener
	f *sourceFilter
}

// Accept returns the next connection from an allowed source.
func (l filteredListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.f.allows(c.RemoteAddr()) {
			return c, nil
		}
		remote := c.RemoteAddr()
		c.Close()
		l.f.refused(remote)
	}
}

// bindFilter returns the Bind socket's source filter, nil when every
// source is allowed.
func (s *Subscriber) bindFilter() *sourceFilter {
	if len(s.cfg.AllowedSources) == 0 {
		return nil
	}
	return &sourceFilter{allowed: s.cfg.AllowedSources, refused: func(remote net.Addr) {
		s.counters.RefusedConnections.Add(1)
		s.logLimited("refused_source", "zmqsub: refused a connection to the bind socket from a source outside zmq.allowed_sources",
			"remote", remote.String(), "bind", s.cfg.Bind)
	}}
}

// knownPod reports whether a topic's pod may publish (Config.KnownPod).
func (s *Subscriber) knownPod(pod []byte) bool {
	return s.cfg.KnownPod == nil || s.cfg.KnownPod(string(pod))
}

// unknownPodDrop counts a message whose topic names a pod KnownPod refuses,
// and logs it at a bounded rate.
func (s *Subscriber) unknownPodDrop(pod []byte, endpoint string) {
	s.drop("unknown_pod", "zmqsub: dropped a message of a pod that is not configured: list it under pods (id or address), or set events.accept_unknown_pods",
		"pod", string(vllmwire.ShownTopic(pod)), "endpoint", endpoint)
}
