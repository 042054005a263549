package epp

import (
	"github.com/cellrouter/cellrouter/internal/edge"
)

// bodyBuffer assembles a request body from the chunks the gateway streams,
// up to max bytes. A body past max is refused as a whole (the client gets
// 413): the picker needs all of it to parse the prompt, and holding more
// than a configured bound per stream would let one client hold the
// server's memory. The zero value with max set is ready.
type bodyBuffer struct {
	max  int
	buf  []byte
	over bool // a chunk took the body past max; later chunks are dropped
}

// add appends one chunk; it returns edge.ErrBodyTooLarge once the body is
// past max (and keeps returning it).
func (b *bodyBuffer) add(chunk []byte) error {
	if b.over || len(b.buf)+len(chunk) > b.max {
		b.over, b.buf = true, nil
		return edge.ErrBodyTooLarge
	}
	b.buf = append(b.buf, chunk...)
	return nil
}

// bytes returns the body so far; the slice is the buffer's own.
func (b *bodyBuffer) bytes() []byte { return b.buf }

// chunks splits body into pieces of at most size bytes, at least one
// (empty for an empty body), aliasing body.
func chunks(body []byte, size int) [][]byte {
	if len(body) == 0 {
		return [][]byte{body}
	}
	out := make([][]byte, 0, (len(body)+size-1)/size)
	for len(body) > size {
		out = append(out, body[:size])
		body = body[size:]
	}
	return append(out, body)
}
