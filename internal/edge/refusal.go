package edge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/cellrouter/cellrouter/api/openai"
)

// net/http refuses some requests itself, before any handler runs, with a
// plain-text answer written straight on the connection: a head past
// MaxHeaderBytes (431), a head it cannot parse or an HTTP/1.1 request
// without Host (400), an unknown Transfer-Encoding (501), an Expect it
// does not support (417). A head that does not arrive within
// ReadHeaderTimeout gets a plain 400 if the request line was cut, and no
// answer at all if the headers were. The server has no hook for these,
// so the connection answers for it: a conn knows whether a handler took
// the current request (NewHTTPServer marks it busy), so whatever the
// server writes on a connection that is not busy is one of its own
// refusals. The conn reads the status off the status line and writes, in
// its place, the same refusal in OpenAI's error shape through WriteHTTP's
// mapping (a timed-out head is 408); a head that timed out without an
// answer gets its 408 when the server closes the connection.

// Write passes the server's writes through, except its own refusals
// (replaced by OpenAI-shaped ones) and anything after a refusal (dropped).
func (c *conn) Write(p []byte) (int, error) {
	if c.refused.Load() {
		return len(p), nil
	}
	if !c.busy.Load() && !c.wrote.Load() {
		if status, reason, ok := statusLine(p); ok {
			c.refused.Store(true)
			_, err := c.Conn.Write(refusal(c.refusalError(status, reason)))
			return len(p), err
		}
	}
	c.wrote.Store(true)
	return c.Conn.Write(p)
}

// refusalLinger bounds how long, and how much of what the client still
// sends, a refused connection reads and discards before it closes.
const (
	refusalLinger      = time.Second
	refusalLingerBytes = 4 << 20
)

// Close answers a head that timed out and was not answered, then closes.
// A refused connection first reads and discards what the client is still
// sending (a megabyte of headers arrives after the 431 is written), within
// refusalLinger and refusalLingerBytes: closing a socket with unread data
// sends a reset, which makes the client's kernel drop the answer it has
// not read yet (net/http's own 500 ms wait is not enough for a client that
// is slow to read).
func (c *conn) Close() error {
	c.close.Do(func() {
		if c.headTimeout.Load() && !c.busy.Load() && !c.wrote.Load() && !c.refused.Swap(true) {
			_ = c.tcp.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Conn.Write(refusal(ErrHeaderTimeout))
		}
		if c.refused.Load() {
			_ = c.CloseWrite()
			_ = c.tcp.SetReadDeadline(time.Now().Add(refusalLinger))
			_, _ = io.CopyN(io.Discard, c.tcp, refusalLingerBytes)
		}
	})
	return c.Conn.Close()
}

// refusalError is the error the server's own refusal of status stands for.
func (c *conn) refusalError(status int, reason string) error {
	switch {
	case c.headTimeout.Load():
		return ErrHeaderTimeout
	case status == http.StatusRequestHeaderFieldsTooLarge:
		c.m.Hit(LimitHeaderSize)
		return ErrHeaderTooLarge
	}
	return &ProtocolError{Status: status, Reason: reason}
}

// statusLine parses the status and reason of a response's first line,
// "HTTP/1.x NNN Text[: reason]"; ok is false if p does not start with one.
func statusLine(p []byte) (status int, reason string, ok bool) {
	line, _, _ := bytes.Cut(p, []byte("\r\n"))
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 || status > 599 {
		return 0, "", false
	}
	if _, r, found := bytes.Cut(line[12:], []byte(": ")); found {
		reason = string(r)
	}
	return status, reason, true
}

// refusal is a whole HTTP/1.1 response answering err in OpenAI's shape,
// closing the connection.
func refusal(err error) []byte {
	a := answerOf(err)
	body, merr := json.Marshal(openai.NewErrorBody(a.typ, a.msg, a.param, a.oaiCode))
	if merr != nil {
		body = []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n",
		a.status, http.StatusText(a.status), len(body))
	if a.retryAfter > 0 {
		fmt.Fprintf(&b, "Retry-After: %s\r\n", retrySeconds(a.retryAfter))
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// ProtocolError is a request net/http refused as malformed or unsupported
// before any handler ran (a 400 without Host, a 501 Transfer-Encoding):
// answered with Status and OpenAI's error body.
type ProtocolError struct {
	// Status is the HTTP status net/http chose.
	Status int
	// Reason is net/http's reason, as "missing required Host header"; it
	// may be empty.
	Reason string
}

func (e *ProtocolError) Error() string {
	if e.Reason == "" {
		return "edge: " + strings.ToLower(http.StatusText(e.Status))
	}
	return "edge: " + strings.ToLower(http.StatusText(e.Status)) + ": " + e.Reason
}

// answer is the OpenAI answer of e.
func (e *ProtocolError) answer() answer {
	msg := "the request is not valid HTTP"
	if e.Status != http.StatusBadRequest {
		msg = "the request uses an HTTP feature this server does not support"
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	code := strings.ReplaceAll(strings.ToLower(http.StatusText(e.Status)), " ", "_")
	if code == "" {
		code = "invalid_request"
	}
	return answer{status: e.Status, code: codes.InvalidArgument, typ: openai.TypeForStatus(e.Status),
		oaiCode: code, msg: msg}
}
