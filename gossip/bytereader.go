package gossip

import "io"

// byteReader is a minimal io.Reader over a byte slice. The roaring decoder
// copies what it reads from a plain io.Reader, so the decoded bitmap never
// aliases a buffer memberlist may reuse.
type byteReader struct {
	b   []byte
	off int
}

func newByteReader(b []byte) *byteReader { return &byteReader{b: b} }

// Read implements io.Reader.
func (r *byteReader) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}
