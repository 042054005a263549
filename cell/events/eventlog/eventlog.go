package eventlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Magic starts every log.
const Magic = "CRKVLOG1"

// Limits on one record, so a corrupt log cannot make the reader allocate
// without bound.
const (
	maxName    = 1 << 10
	maxPayload = 64 << 20
)

// ErrFormat is wrapped by every error about a malformed log.
var ErrFormat = errors.New("eventlog: malformed log")

// Record is one engine message of a log.
type Record struct {
	Pod, Model string
	Seq        uint64
	// Payload is the vLLM msgpack EventBatch.
	Payload []byte
}

// Writer appends records to a log.
type Writer struct {
	w   *bufio.Writer
	buf [binary.MaxVarintLen64]byte
}

// NewWriter writes the magic and returns a Writer; call Flush at the end.
func NewWriter(w io.Writer) (*Writer, error) {
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString(Magic); err != nil {
		return nil, err
	}
	return &Writer{w: bw}, nil
}

func (w *Writer) uvarint(v uint64) error {
	n := binary.PutUvarint(w.buf[:], v)
	_, err := w.w.Write(w.buf[:n])
	return err
}

func (w *Writer) bytes(b []byte) error {
	if err := w.uvarint(uint64(len(b))); err != nil {
		return err
	}
	_, err := w.w.Write(b)
	return err
}

// Write appends one record.
func (w *Writer) Write(r Record) error {
	if len(r.Pod) > maxName || len(r.Model) > maxName || len(r.Payload) > maxPayload {
		return fmt.Errorf("eventlog: record of pod %q too large", r.Pod)
	}
	for _, err := range []error{
		w.bytes([]byte(r.Pod)), w.bytes([]byte(r.Model)), w.uvarint(r.Seq), w.bytes(r.Payload),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Flush writes buffered records out.
func (w *Writer) Flush() error { return w.w.Flush() }

// Reader reads records of a log.
type Reader struct {
	r *bufio.Reader
	n int // records read
}

// NewReader checks the magic and returns a Reader.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	magic := make([]byte, len(Magic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != Magic {
		return nil, fmt.Errorf("%w: no %s header", ErrFormat, Magic)
	}
	return &Reader{r: br}, nil
}

func (r *Reader) field(limit uint64, what string) ([]byte, error) {
	n, err := binary.ReadUvarint(r.r)
	if err != nil {
		return nil, r.fail(what, err)
	}
	if n > limit {
		return nil, fmt.Errorf("%w: record %d: %s of %d bytes (limit %d)", ErrFormat, r.n, what, n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		return nil, r.fail(what, err)
	}
	return b, nil
}

func (r *Reader) fail(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: record %d: truncated %s", ErrFormat, r.n, what)
	}
	return fmt.Errorf("%w: record %d: %s: %v", ErrFormat, r.n, what, err)
}

// Next returns the next record, or io.EOF after the last one.
func (r *Reader) Next() (Record, error) {
	if _, err := r.r.Peek(1); errors.Is(err, io.EOF) {
		return Record{}, io.EOF
	}
	pod, err := r.field(maxName, "pod")
	if err != nil {
		return Record{}, err
	}
	model, err := r.field(maxName, "model")
	if err != nil {
		return Record{}, err
	}
	seq, err := binary.ReadUvarint(r.r)
	if err != nil {
		return Record{}, r.fail("seq", err)
	}
	payload, err := r.field(maxPayload, "payload")
	if err != nil {
		return Record{}, err
	}
	r.n++
	return Record{Pod: string(pod), Model: string(model), Seq: seq, Payload: payload}, nil
}

// ReadAll reads every record of a log.
func ReadAll(rd io.Reader) ([]Record, error) {
	r, err := NewReader(rd)
	if err != nil {
		return nil, err
	}
	var out []Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
}
