package load

import (
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// Prefills are the prompts the router sent to pods whose prefill has not
// ended yet (no first token): what each pod is computing now. An engine
// stores a prompt's blocks in its prefix cache when its prefill ends, so a
// request that starts on that pod before then shares nothing with it and
// computes the same blocks again. The cell asks Deepest before it sends a
// request and, when the pod is still computing part of the request's
// prefix, holds the request until that prefill ends (see the cell's
// prefix wait). It is safe for concurrent use.
type Prefills struct {
	mu   sync.Mutex
	pods map[string][]*Prefill
}

// Prefill is one prompt being prefilled on a pod.
type Prefill struct {
	pod   string
	chain []blockhash.Hash
	from  int       // the blocks of chain the pod held when the prefill began
	began time.Time // when it was sent
	done  chan struct{}
	ended bool // under Prefills.mu
}

// NewPrefills returns an empty set.
func NewPrefills() *Prefills { return &Prefills{pods: map[string][]*Prefill{}} }

// Begin records that pod prefills a prompt of the chained block hashes
// chain, of which it held the first from blocks already: the prefill
// stores chain[from:]; now is when it was sent. The caller must not modify
// chain until End.
func (p *Prefills) Begin(pod string, chain []blockhash.Hash, from int, now time.Time) *Prefill {
	f := &Prefill{pod: pod, chain: chain, from: from, began: now, done: make(chan struct{})}
	p.mu.Lock()
	p.pods[pod] = append(p.pods[pod], f)
	p.mu.Unlock()
	return f
}

// End records that f's prefill ended (its first token, a failure or a
// cancellation) and wakes whoever waits on it. It is idempotent; a nil f
// is a no-op.
func (p *Prefills) End(f *Prefill) {
	if f == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if f.ended {
		return
	}
	f.ended = true
	close(f.done)
	list := p.pods[f.pod]
	for i, g := range list {
		if g == f {
			list[i] = list[len(list)-1]
			list[len(list)-1] = nil
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(p.pods, f.pod)
	} else {
		p.pods[f.pod] = list
	}
}

// Done is closed when f's prefill ends.
func (f *Prefill) Done() <-chan struct{} { return f.done }

// From returns the blocks the pod held of f's prompt when its prefill
// began.
func (f *Prefill) From() int { return f.from }

// Work returns the blocks f's prefill stores.
func (f *Prefill) Work() int { return len(f.chain) - f.from }

// Began returns when f's prefill was sent.
func (f *Prefill) Began() time.Time { return f.began }

// Deepest returns the prefill on pod that will store the most blocks of
// chain's prefix the pod does not hold: its gain, the blocks it shares
// with chain beyond both above (what the pod is known to hold of chain)
// and what the pod held of its own prompt when it began. It returns nil
// and 0 when no prefill on pod gains anything.
func (p *Prefills) Deepest(pod string, chain []blockhash.Hash, above int) (*Prefill, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *Prefill
	gain := 0
	for _, f := range p.pods[pod] {
		if g := commonPrefix(f.chain, chain) - max(above, f.from); g > gain {
			best, gain = f, g
		}
	}
	return best, gain
}

// Len returns the prefills in progress on pod.
func (p *Prefills) Len(pod string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pods[pod])
}

// commonPrefix is the length of the longest common prefix of two chains of
// chained hashes. A chained hash names its whole prefix, so position i
// matches exactly when every position before it does, and a binary
// search finds the end in O(log n).
func commonPrefix(a, b []blockhash.Hash) int {
	lo, hi := 0, min(len(a), len(b)) // a[:lo] == b[:lo]; a[hi-1] != b[hi-1] past hi
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		if a[mid-1] == b[mid-1] {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
