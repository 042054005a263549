package edge

import (
	"log/slog"
	"net"
)

// Loopback reports whether addr (host:port) listens only on the loopback
// interface: a loopback IP or "localhost". An empty host or a wildcard
// listens everywhere.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listener names a listening address for WarnIfExposed.
type Listener struct {
	// Name says what listens ("http", "grpc").
	Name string
	// Addr is its address, host:port.
	Addr string
}

// WarnIfExposed logs a warning for each listener that is reachable from
// other hosts while nothing authenticates its callers (no API keys, no
// client certificates required): what a scan of the network can reach,
// anyone can use. It returns how many it warned about.
func WarnIfExposed(log *slog.Logger, authenticated bool, ls ...Listener) int {
	if authenticated {
		return 0
	}
	n := 0
	for _, l := range ls {
		if !Loopback(l.Addr) {
			n++
			log.Warn("serving without authentication on a non-loopback address: anyone who reaches it can use it; "+
				"set an API key file, require client certificates or encrypt gossip, or bind to 127.0.0.1", "listener", l.Name, "addr", l.Addr)
		}
	}
	return n
}
