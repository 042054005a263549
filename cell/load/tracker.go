package load

import "sync"

// Usage is one pod's load.
type Usage struct {
	// Requests is the number of requests in flight.
	Requests int
	// Blocks is the KV blocks they occupy (prompt and output so far,
	// predicted at routing).
	Blocks int
	// PrefillBlocks is the part of Blocks still being prefilled (the
	// uncached prompt blocks of requests before their first token).
	PrefillBlocks int
	// Templates counts in-flight requests by route template.
	Templates map[string]int
}

// Ticket is one routed request's entry in the tracker.
type Ticket struct {
	id            uint64 // numbers the local tickets, for peers; 0 for remote ones
	pod           string
	blocks        int
	prefillBlocks int
	template      string
	prefillDone   bool
	done          bool
}

// Tracker is the active-request accounting of a cell: its own requests
// and, with replicas, those its peers reported (see remote.go). It is safe
// for concurrent use.
type Tracker struct {
	mu     sync.Mutex
	pods   map[string]*Usage
	nextID uint64
	// observe receives every change to a local ticket (SetObserver), after
	// the lock is released; nil when nobody listens.
	observe func(Change)
	// remote holds the peers' tickets by origin and id.
	remote map[string]map[uint64]*remoteTicket
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{pods: map[string]*Usage{}, remote: map[string]map[uint64]*remoteTicket{}}
}

// SetObserver makes f receive every change to a local ticket (start, first
// token, done), called after the tracker's lock is released, from the
// goroutine that made the change: f must be quick and must not call the
// tracker. Set it before the tracker is used.
func (t *Tracker) SetObserver(f func(Change)) { t.observe = f }

// Start records a request routed to pod: blocks in all, of which
// prefillBlocks are not cached and will be prefilled; template is its
// route template ("" for none).
func (t *Tracker) Start(pod string, blocks, prefillBlocks int, template string) *Ticket {
	t.mu.Lock()
	t.nextID++
	tk := t.startLocked(pod, blocks, prefillBlocks, template)
	tk.id = t.nextID
	t.mu.Unlock()
	if t.observe != nil {
		t.observe(Change{Op: OpStart, ID: tk.id, Pod: pod, Blocks: blocks, PrefillBlocks: prefillBlocks, Template: template})
	}
	return tk
}

func (t *Tracker) startLocked(pod string, blocks, prefillBlocks int, template string) *Ticket {
	u := t.pods[pod]
	if u == nil {
		u = &Usage{Templates: map[string]int{}}
		t.pods[pod] = u
	}
	u.Requests++
	u.Blocks += blocks
	u.PrefillBlocks += prefillBlocks
	if template != "" {
		u.Templates[template]++
	}
	return &Ticket{pod: pod, blocks: blocks, prefillBlocks: prefillBlocks, template: template}
}

// FirstToken marks the request's prefill done. It is idempotent.
func (t *Tracker) FirstToken(tk *Ticket) {
	t.mu.Lock()
	changed := t.firstTokenLocked(tk)
	t.mu.Unlock()
	if changed && t.observe != nil {
		t.observe(Change{Op: OpFirstToken, ID: tk.id, Pod: tk.pod})
	}
}

func (t *Tracker) firstTokenLocked(tk *Ticket) bool {
	if tk.prefillDone || tk.done {
		return false
	}
	tk.prefillDone = true
	if u := t.pods[tk.pod]; u != nil {
		u.PrefillBlocks -= tk.prefillBlocks
	}
	return true
}

// Done frees the request's blocks, at its end or on cancellation. It is
// idempotent.
func (t *Tracker) Done(tk *Ticket) {
	t.mu.Lock()
	changed := t.doneLocked(tk)
	t.mu.Unlock()
	if changed && t.observe != nil {
		t.observe(Change{Op: OpDone, ID: tk.id, Pod: tk.pod})
	}
}

func (t *Tracker) doneLocked(tk *Ticket) bool {
	if tk.done {
		return false
	}
	tk.done = true
	u := t.pods[tk.pod]
	if u == nil {
		return true
	}
	if !tk.prefillDone {
		u.PrefillBlocks -= tk.prefillBlocks
	}
	u.Requests--
	u.Blocks -= tk.blocks
	if tk.template != "" {
		if u.Templates[tk.template]--; u.Templates[tk.template] == 0 {
			delete(u.Templates, tk.template)
		}
	}
	if u.Requests == 0 {
		delete(t.pods, tk.pod)
	}
	return true
}

// Usage returns a pod's load.
func (t *Tracker) Usage(pod string) Usage {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.pods[pod]
	if u == nil {
		return Usage{}
	}
	out := *u
	if len(u.Templates) > 0 {
		out.Templates = make(map[string]int, len(u.Templates))
		for k, v := range u.Templates {
			out.Templates[k] = v
		}
	} else {
		out.Templates = nil
	}
	return out
}

// Snapshot calls f for every pod with load, under the tracker's lock: f
// must not call the tracker and must not keep u.Templates.
func (t *Tracker) Snapshot(f func(pod string, u *Usage)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for pod, u := range t.pods {
		f(pod, u)
	}
}
