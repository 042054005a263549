package zmqsub

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// bufferedScheme is the zmq4 transport name under which the Subscriber's
// SUB sockets reach tcp:// endpoints through bufferedTCP.
const bufferedScheme = "zmqsub+tcp"

// readBuffer is the read buffer of each SUB connection; 0 reads the
// connection directly (as zmq4's own tcp transport does). Tests toggle it.
var readBuffer = 64 << 10

// registerOnce registers bufferedTCP with zmq4; registered says it worked.
var (
	registerOnce sync.Once
	registered   bool
)

// subAddr returns the address a SUB socket should dial or bind for ep: a
// tcp:// endpoint goes through the buffered transport, anything else is
// left to zmq4.
//
// zmq4 reads each frame header and frame body with its own read call on
// the connection, so an unbuffered connection costs several system calls
// per message (about seven for [topic, seq, payload]); a buffered reader
// serves a backlog of messages with one. Large frames bypass the buffer
// (bufio reads them straight into zmq4's frame), so nothing is copied twice.
//
// filtered forces the Subscriber's transport even without a read buffer:
// it is what applies a Bind socket's source filter (acl.go).
func subAddr(ep string, filtered bool) string {
	if (readBuffer <= 0 && !filtered) || !strings.HasPrefix(ep, "tcp://") {
		return ep
	}
	registerOnce.Do(func() {
		registered = zmq4.RegisterTransport(bufferedScheme, bufferedTCP{base: transport.New("tcp")}) == nil
	})
	if !registered {
		return ep
	}
	return bufferedScheme + ep[len("tcp"):]
}

// bufferedTCP is zmq4's tcp transport with a read buffer on every
// connection it dials or accepts.
type bufferedTCP struct {
	base transport.Transport
}

// Dial dials addr over TCP and buffers the connection's reads.
func (t bufferedTCP) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := t.base.Dial(ctx, d, addr)
	if err != nil {
		return nil, err
	}
	return newBufConn(c), nil
}

// Listen listens on addr over TCP; accepted connections buffer their reads,
// and when ctx carries a source filter (the socket's context: acl.go), only
// connections from allowed sources are accepted.
func (t bufferedTCP) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := t.base.Listen(ctx, addr)
	if err != nil {
		return nil, err
	}
	if f := sourceFilterFrom(ctx); f != nil {
		l = filteredListener{Listener: l, f: f}
	}
	if readBuffer <= 0 {
		return l, nil
	}
	return bufListener{l}, nil
}

// Addr resolves an endpoint's address as the tcp transport does.
func (t bufferedTCP) Addr(ep string) (string, error) { return t.base.Addr(ep) }

// bufListener wraps accepted connections in bufConn.
type bufListener struct{ net.Listener }

// Accept returns the next connection, its reads buffered.
func (l bufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newBufConn(c), nil
}

// bufConn is a connection whose reads go through a buffer. zmq4 reads a
// connection from one goroutine at a time, as bufio requires.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

// newBufConn returns c with buffered reads.
func newBufConn(c net.Conn) net.Conn {
	n := readBuffer
	if n <= 0 {
		n = 64 << 10
	}
	return &bufConn{Conn: c, r: bufio.NewReaderSize(c, n)}
}

// Read reads from the buffer, refilling it from the connection.
func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }
