package edge

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
)

// WrapListener returns l whose connections count the header and idle
// timeouts of the HTTP server that serves them (NewHTTPServer's ConnState
// tells them what the server is waiting for). Put TLS on top of it
// (tls.NewListener), not under it, so the server still sees *tls.Conn.
func WrapListener(l net.Listener, m *Metrics) net.Listener { return &listener{Listener: l, m: m} }

type listener struct {
	net.Listener
	m *Metrics
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, m: l.m}, nil
}

// conn is a server connection that classifies its read timeouts by what
// the server was waiting for: a request's head (a new connection, or bytes
// of a next request on a kept-alive one) or the next request on an idle
// connection. Body timeouts are Harden's; they are not counted here.
type conn struct {
	net.Conn
	m     *Metrics
	state atomic.Int32 // http.ConnState
	// started says bytes arrived since the connection went idle.
	started atomic.Bool
	// counted says this wait's timeout was counted (the server may read
	// again after one before it gives the connection up).
	counted atomic.Bool
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.started.Store(true)
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !c.counted.Swap(true) {
		switch http.ConnState(c.state.Load()) {
		case http.StateNew:
			c.m.Hit(LimitHeaderTimeout)
		case http.StateIdle:
			if c.started.Load() {
				c.m.Hit(LimitHeaderTimeout)
			} else {
				c.m.Hit(LimitIdleTimeout)
			}
		}
	}
	return n, err
}

// connState is NewHTTPServer's http.Server.ConnState hook.
func connState(nc net.Conn, s http.ConnState) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if c, ok := nc.(*conn); ok {
		if s == http.StateIdle {
			c.started.Store(false)
		}
		c.counted.Store(false)
		c.state.Store(int32(s))
	}
}
