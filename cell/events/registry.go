package events

import (
	"sort"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell/index"
)

// PodState is a pod's standing in the Registry.
type PodState uint8

// The pod states. A pod starts Unknown (configured, nothing heard yet),
// becomes Ready with its first applied batch, Degraded while one of its
// holders waits for a replay, and Dead when Tick kills it. A Dead pod comes
// back: Ready with its next batch, Unknown with its next good health check.
const (
	StateUnknown PodState = iota
	StateReady
	StateDegraded
	StateDead
)

// String names the state.
func (s PodState) String() string {
	switch s {
	case StateUnknown:
		return "unknown"
	case StateReady:
		return "ready"
	case StateDegraded:
		return "degraded"
	case StateDead:
		return "dead"
	}
	return "invalid"
}

// HolderInfo describes one index holder of a pod (the pod itself, or one of
// its data-parallel ranks).
type HolderInfo struct {
	// ID is the holder id (Batch.Holder()).
	ID string
	// Slot is the holder's index slot.
	Slot index.Slot
	// LastSeq is the last sequence number the holder applied.
	LastSeq uint64
	// Degraded is true while the holder waits for a replay.
	Degraded bool
	// Batches counts the holder's batches received.
	Batches uint64
}

// PodInfo is one pod in a Registry snapshot.
type PodInfo struct {
	// ID, Address and Role come from configuration or discovery.
	ID      string
	Address string
	Role    Role
	// Static is true for a managed pod (configured, or found by the
	// cell's discovery: see Manage), false for one known only from its
	// events.
	Static bool
	// State is the pod's state.
	State PodState
	// LastEvent and LastHealth are the times of its last batch and of its
	// last successful health check (zero if none).
	LastEvent, LastHealth time.Time
	// Holders are its index holders, sorted by id.
	Holders []HolderInfo
	// Batches counts its batches received; HealthFailures its failed checks.
	Batches, HealthFailures uint64
}

type podEntry struct {
	info    PodInfo
	since   time.Time // when the pod entered the registry or its current life
	deadAt  time.Time
	holders map[string]*HolderInfo
}

// Registry keeps the cell's pods and decides when they are dead. It is a
// decision core: no goroutines, no clock (every method that needs the time
// is given it), no index calls; the Applier acts on its decisions. Its
// methods are safe for concurrent use.
type Registry struct {
	mu        sync.Mutex
	deadAfter time.Duration
	pods      map[string]*podEntry
}

// NewRegistry returns a registry holding cfg.Pods, Unknown since now.
func NewRegistry(cfg Config, now time.Time) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Registry{deadAfter: cfg.DeadAfter, pods: make(map[string]*podEntry)}
	for _, p := range cfg.Pods {
		role := p.Role
		if role == "" {
			role = RoleBoth
		}
		r.pods[p.ID] = &podEntry{
			info:    PodInfo{ID: p.ID, Address: p.Address, Role: role, Static: true},
			since:   now,
			holders: make(map[string]*HolderInfo),
		}
	}
	return r, nil
}

// entry returns the pod's entry, discovering it if new. The caller holds mu.
func (r *Registry) entry(pod string, now time.Time) *podEntry {
	e := r.pods[pod]
	if e == nil {
		e = &podEntry{
			info:    PodInfo{ID: pod, Role: RoleBoth},
			since:   now,
			holders: make(map[string]*HolderInfo),
		}
		r.pods[pod] = e
	}
	return e
}

// ObserveBatch records that holder of pod sent a batch at now. applied says
// whether the batch advanced the holder (lastSeq is then its number);
// degraded says whether the holder waits for a replay after it.
func (r *Registry) ObserveBatch(pod, holder string, slot index.Slot, seq uint64, applied, degraded bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(pod, now)
	if e.info.State == StateDead {
		e.since = now
	}
	e.info.LastEvent = maxTime(e.info.LastEvent, now)
	e.info.Batches++
	h := e.holders[holder]
	if h == nil {
		h = &HolderInfo{ID: holder}
		e.holders[holder] = h
	}
	h.Slot = slot
	h.Batches++
	if applied {
		h.LastSeq = seq
	}
	h.Degraded = degraded
	e.info.State = r.stateOf(e)
}

// SetDegraded marks holder of pod as waiting for a replay or not (a repair
// or a give-up outside a batch).
func (r *Registry) SetDegraded(pod, holder string, degraded bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.pods[pod]
	if e == nil {
		return
	}
	if h := e.holders[holder]; h != nil {
		h.Degraded = degraded
	}
	if e.info.State != StateDead && e.info.State != StateUnknown {
		e.info.State = r.stateOf(e)
	}
}

// stateOf is the state of a live pod that has sent events: Degraded if a
// holder is, else Ready.
func (r *Registry) stateOf(e *podEntry) PodState {
	for _, h := range e.holders {
		if h.Degraded {
			return StateDegraded
		}
	}
	return StateReady
}

// ObserveHealth records a health check of pod at now. A successful check
// keeps the pod alive; a Dead pod that answers becomes Unknown (alive, but
// with nothing indexed until its events come).
func (r *Registry) ObserveHealth(pod string, ok bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(pod, now)
	if !ok {
		e.info.HealthFailures++
		return
	}
	e.info.LastHealth = maxTime(e.info.LastHealth, now)
	if e.info.State == StateDead {
		e.info.State = StateUnknown
		e.since = now
	}
}

// Tick returns the pods that die at now, sorted: those not Dead whose last
// batch, last good health check and entry into the registry are all older
// than Config.DeadAfter. They become Dead and lose their holders; the caller
// kills their index slots (Applier.Tick does both). Discovered pods dead for
// another DeadAfter are forgotten; configured ones stay, Dead.
func (r *Registry) Tick(now time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var dead []string
	for id, e := range r.pods {
		if e.info.State == StateDead {
			if !e.info.Static && now.Sub(e.deadAt) > r.deadAfter {
				delete(r.pods, id)
			}
			continue
		}
		last := maxTime(maxTime(e.info.LastEvent, e.info.LastHealth), e.since)
		if now.Sub(last) > r.deadAfter {
			e.info.State = StateDead
			e.deadAt = now
			clear(e.holders)
			dead = append(dead, id)
		}
	}
	sort.Strings(dead)
	return dead
}

// State returns pod's state, and false if the registry does not know it.
func (r *Registry) State(pod string) (PodState, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.pods[pod]
	if e == nil {
		return 0, false
	}
	return e.info.State, true
}

// Snapshot returns every pod, sorted by id, for the cell's state API. The
// result is a copy the caller owns.
func (r *Registry) Snapshot() []PodInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]PodInfo, 0, len(r.pods))
	for _, e := range r.pods {
		p := e.info
		p.Holders = make([]HolderInfo, 0, len(e.holders))
		for _, h := range e.holders {
			p.Holders = append(p.Holders, *h)
		}
		sort.Slice(p.Holders, func(i, j int) bool { return p.Holders[i].ID < p.Holders[j].ID })
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
