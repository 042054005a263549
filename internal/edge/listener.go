package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// WrapListener returns l whose connections NewHTTPServer's server can
// answer for (see refusal.go): they count the header and idle timeouts,
// and turn net/http's own refusals, written before any handler runs, into
// OpenAI error bodies. With tlsCfg set it also terminates TLS, under the
// wrapper, so the wrapper sees the plain HTTP the server writes; the
// handshake is bounded by l's ReadHeaderTimeout, and handlers still find
// the connection's TLS state in Request.TLS. Do not put tls.NewListener
// on top of it: pass the configuration here.
func WrapListener(l net.Listener, lim Limits, m *Metrics, tlsCfg *tls.Config) net.Listener {
	return &listener{Listener: l, m: m, tls: tlsCfg, handshake: lim.ReadHeaderTimeout}
}

type listener struct {
	net.Listener
	m         *Metrics
	tls       *tls.Config
	handshake time.Duration
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	ec := &conn{Conn: c, tcp: c, m: l.m}
	if l.tls == nil {
		return ec, nil
	}
	ec.tls = tls.Server(c, l.tls)
	ec.Conn = ec.tls
	return &tlsConn{conn: ec, timeout: l.handshake}, nil
}

// conn is a server connection seen as the HTTP server sees it (over TLS
// when there is TLS). It classifies its read timeouts by what the server
// was waiting for: a request's head (a new connection, or bytes of a next
// request on a kept-alive one) or the next request on an idle connection;
// body timeouts are Harden's and not counted here. And it answers for the
// server when the server refuses a request before any handler runs.
type conn struct {
	net.Conn          // what the server reads and writes
	tcp      net.Conn // the accepted connection
	tls      *tls.Conn
	m        *Metrics
	state    atomic.Int32 // http.ConnState
	// started says bytes arrived since the connection went idle.
	started atomic.Bool
	// counted says this wait's timeout was counted (the server may read
	// again after one before it gives the connection up).
	counted atomic.Bool
	// headTimeout says the wait for a request's head timed out after
	// some of it arrived: the refusal to write is 408.
	headTimeout atomic.Bool
	// busy says a handler took the current request; cleared when the
	// connection goes idle after its response.
	busy atomic.Bool
	// wrote says the server wrote on the connection since it went idle.
	wrote atomic.Bool
	// refused says the connection's refusal was written: anything else
	// the server writes on it is dropped.
	refused atomic.Bool
	close   sync.Once
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.started.Store(true)
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !c.counted.Swap(true) {
		switch http.ConnState(c.state.Load()) {
		case http.StateNew, http.StateIdle:
			if c.started.Load() {
				c.m.Hit(LimitHeaderTimeout)
				c.headTimeout.Store(true)
			} else if http.ConnState(c.state.Load()) == http.StateNew {
				c.m.Hit(LimitHeaderTimeout)
			} else {
				c.m.Hit(LimitIdleTimeout)
			}
		}
	}
	return n, err
}

// CloseWrite lets the server finish a refusal the way it does on a plain
// TCP connection: the answer, then the end of the stream, then a pause
// before the close, so the client reads the answer rather than a reset.
func (c *conn) CloseWrite() error {
	if c.tls != nil {
		return c.tls.CloseWrite()
	}
	if cw, ok := c.tcp.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// tlsConn is a conn over TLS. The server asks for its TLS state before it
// reads (to fill Request.TLS), so ConnectionState runs the handshake.
type tlsConn struct {
	*conn
	timeout time.Duration
	once    sync.Once
}

// ConnectionState completes the handshake within the header timeout and
// returns the connection's TLS state. A failed handshake closes the
// connection (a client speaking plain HTTP is told so first).
func (c *tlsConn) ConnectionState() tls.ConnectionState {
	c.once.Do(func() {
		_ = c.tcp.SetDeadline(time.Now().Add(c.timeout))
		err := c.tls.HandshakeContext(context.Background())
		_ = c.tcp.SetDeadline(time.Time{})
		if err == nil {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.m.Hit(LimitHeaderTimeout)
		}
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			_ = c.tcp.SetWriteDeadline(time.Now().Add(c.timeout))
			_, _ = re.Conn.Write(refusal(&ProtocolError{Status: http.StatusBadRequest, Reason: "this server speaks HTTPS"}))
		}
		c.refused.Store(true)
		_ = c.tcp.Close()
	})
	return c.tls.ConnectionState()
}

// looksLikeHTTP says a TLS record header is the start of an HTTP request.
func looksLikeHTTP(h [5]byte) bool {
	switch string(h[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE":
		return true
	}
	return false
}

// connOf finds the conn under what the server hands its hooks.
func connOf(nc net.Conn) *conn {
	switch c := nc.(type) {
	case *conn:
		return c
	case *tlsConn:
		return c.conn
	}
	return nil
}

// connState is NewHTTPServer's http.Server.ConnState hook.
func connState(nc net.Conn, s http.ConnState) {
	c := connOf(nc)
	if c == nil {
		return
	}
	if s == http.StateIdle {
		c.started.Store(false)
		c.headTimeout.Store(false)
		c.busy.Store(false)
		c.wrote.Store(false)
	}
	c.counted.Store(false)
	c.state.Store(int32(s))
}
