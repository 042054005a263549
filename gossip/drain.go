package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The kinds of PeerMessage the daemons exchange. The pool only carries
// them; they are named here, beside the message, so that the cell's
// replicas and the global replicas never give two meanings to one kind.
const (
	// PeerKindLoad carries a batch of a cell replica's load changes
	// (package cell/replica encodes them).
	PeerKindLoad uint8 = 1
	// PeerKindDrain carries one Drain: of a pod between the replicas of a
	// cell, or of a whole cell between global replicas.
	PeerKindDrain uint8 = 2
)

// drainVersion is the first byte of a drain body.
const drainVersion = 1

// MaxDrainName bounds the cell id and pod id of a Drain on the wire.
const MaxDrainName = 256

// ErrMalformedDrain is wrapped by every error of DecodeDrain.
var ErrMalformedDrain = errors.New("gossip: malformed drain message")

// Drain is a drain (or, with Cancel, an undrain) of a pod of the sender's
// cell, or, between global replicas, of a whole cell (Pod empty).
type Drain struct {
	Cell, Pod string
	Cancel    bool
}

// EncodeDrain returns the wire form of d: a version byte, the cell and the
// pod as uvarint-length strings, and a cancel byte (0 or 1).
func EncodeDrain(d Drain) []byte {
	b := []byte{drainVersion}
	b = binary.AppendUvarint(b, uint64(len(d.Cell)))
	b = append(b, d.Cell...)
	b = binary.AppendUvarint(b, uint64(len(d.Pod)))
	b = append(b, d.Pod...)
	if d.Cancel {
		return append(b, 1)
	}
	return append(b, 0)
}

// DecodeDrain parses a body made by EncodeDrain. It copies what it keeps.
func DecodeDrain(b []byte) (Drain, error) {
	fail := func(format string, args ...any) (Drain, error) {
		return Drain{}, fmt.Errorf("%w: "+format, append([]any{ErrMalformedDrain}, args...)...)
	}
	if len(b) < 1 {
		return fail("truncated version")
	}
	if b[0] != drainVersion {
		return fail("unknown version %d", b[0])
	}
	b = b[1:]
	var names [2]string
	for i, what := range [2]string{"cell", "pod"} {
		n, k := binary.Uvarint(b)
		if k <= 0 {
			return fail("%s length: bad varint", what)
		}
		if n > MaxDrainName {
			return fail("%s length: %d is above %d", what, n, MaxDrainName)
		}
		b = b[k:]
		if uint64(len(b)) < n {
			return fail("%s: length %d exceeds the %d bytes left", what, n, len(b))
		}
		names[i], b = string(b[:n]), b[n:]
	}
	d := Drain{Cell: names[0], Pod: names[1]}
	if len(b) < 1 {
		return fail("cancel: truncated")
	}
	switch b[0] {
	case 0:
	case 1:
		d.Cancel = true
	default:
		return fail("cancel is not 0 or 1")
	}
	if len(b) > 1 {
		return fail("%d trailing bytes", len(b)-1)
	}
	if d.Cell == "" && d.Pod == "" {
		return fail("neither cell nor pod")
	}
	return d, nil
}
