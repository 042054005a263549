package vllmpub

// entry is one buffered batch: its sequence number and encoded payload. The
// payload is never modified once buffered, so snapshots may share it.
type entry struct {
	seq     uint64
	payload []byte
}

// ring keeps the last cap(buf) entries in sequence order, overwriting the
// oldest. It is not safe for concurrent use; the Publisher locks it.
type ring struct {
	buf   []entry
	start int // index of the oldest entry
	n     int // number of entries held
}

// newRing returns an empty ring holding up to size entries.
func newRing(size int) *ring { return &ring{buf: make([]entry, size)} }

// push appends e, dropping the oldest entry when the ring is full.
func (r *ring) push(e entry) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = e
		r.n++
		return
	}
	r.buf[r.start] = e
	r.start = (r.start + 1) % len(r.buf)
}

// since appends to dst, in order, every held entry whose seq is at least
// from, and returns dst. Entries are in increasing seq order, so it finds the
// first one by binary search.
func (r *ring) since(dst []entry, from uint64) []entry {
	lo, hi := 0, r.n
	for lo < hi {
		mid := (lo + hi) / 2
		if r.at(mid).seq < from {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for i := lo; i < r.n; i++ {
		dst = append(dst, r.at(i))
	}
	return dst
}

// at returns the i-th oldest entry.
func (r *ring) at(i int) entry { return r.buf[(r.start+i)%len(r.buf)] }

// bounds returns the oldest and newest seq held, and false when empty.
func (r *ring) bounds() (oldest, newest uint64, ok bool) {
	if r.n == 0 {
		return 0, 0, false
	}
	return r.at(0).seq, r.at(r.n - 1).seq, true
}
