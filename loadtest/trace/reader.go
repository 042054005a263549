package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxLineBytes bounds one trace line: MaxHashIDs ids of up to 20 digits each
// plus the other fields.
const maxLineBytes = 24*MaxHashIDs + 4096

// LineError reports a bad line: its 1-based number and what is wrong with it.
type LineError struct {
	// Path is the file the line came from, if known.
	Path string
	// Line is the 1-based line number in the input.
	Line int
	// Err is the decoding or validation error; errors.Is sees through it.
	Err error
}

// Error returns "trace: line N: ..." or, with a Path, "trace: PATH:N: ...".
func (e *LineError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("trace: %s:%d: %v", e.Path, e.Line, trimPrefix(e.Err.Error()))
	}
	return fmt.Sprintf("trace: line %d: %v", e.Line, trimPrefix(e.Err.Error()))
}

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// trimPrefix drops a leading "trace: " so a LineError does not repeat it.
func trimPrefix(s string) string {
	const p = "trace: "
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// Reader streams the records of a Mooncake trace. Blank lines are skipped.
// A Reader is not safe for concurrent use.
type Reader struct {
	sc   *bufio.Scanner
	line int
}

// NewReader returns a Reader of the trace in r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLineBytes)
	return &Reader{sc: sc}
}

// Next returns the next record, io.EOF at the end of the input, a *LineError
// for a bad line, or the underlying read error. After an error other than a
// *LineError the Reader must not be used again; after a *LineError the caller
// may continue with the next line.
func (r *Reader) Next() (Record, error) {
	for r.sc.Scan() {
		r.line++
		b := bytes.TrimSpace(r.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec, err := DecodeLine(b)
		if err != nil {
			return Record{}, &LineError{Line: r.line, Err: err}
		}
		return rec, nil
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Record{}, &LineError{Line: r.line + 1, Err: fmt.Errorf("%w: line longer than %d bytes", ErrBadValue, maxLineBytes)}
		}
		return Record{}, fmt.Errorf("trace: read: %w", err)
	}
	return Record{}, io.EOF
}

// Line returns the number of the line the last record or error came from.
func (r *Reader) Line() int { return r.line }

// ReadAll reads up to max records (all of them if max <= 0) and stops at the
// first error. Records must arrive in non-decreasing timestamp order, as in
// the published traces; an earlier timestamp is a *LineError.
func ReadAll(in io.Reader, max int) ([]Record, error) {
	r := NewReader(in)
	var out []Record
	for max <= 0 || len(out) < max {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if n := len(out); n > 0 && rec.Timestamp < out[n-1].Timestamp {
			return nil, &LineError{Line: r.Line(), Err: fmt.Errorf("%w: timestamp %d is before the previous line's %d",
				ErrBadValue, rec.Timestamp, out[n-1].Timestamp)}
		}
		out = append(out, rec)
	}
	return out, nil
}

// ReadFile reads up to max records (all if max <= 0) of the trace file at path.
func ReadFile(path string, max int) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	recs, err := ReadAll(f, max)
	if err != nil {
		var le *LineError
		if errors.As(err, &le) {
			le.Path = path
			return nil, le
		}
		return nil, fmt.Errorf("trace: %s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("trace: %s: no records", path)
	}
	return recs, nil
}
