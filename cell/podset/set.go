package podset

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Set is the live pod set: the static pods merged with what each dynamic
// source last published. Load is lock-free; Publish and Subscribe may be
// called concurrently.
type Set struct {
	cur atomic.Pointer[Snapshot]

	mu      sync.Mutex
	static  []Pod
	sources map[string]published
	subs    map[chan struct{}]struct{}
}

type published struct {
	pods    []Pod
	refused []Refusal
}

// New returns a set holding the static pods (all routable), at version 1.
func New(static []Pod) *Set {
	s := &Set{sources: map[string]published{}, subs: map[chan struct{}]struct{}{}}
	for _, p := range static {
		p.Source, p.Routable = SourceStatic, true
		s.static = append(s.static, p)
	}
	s.cur.Store(s.merge(1))
	return s
}

// Load returns the current snapshot. It never blocks.
func (s *Set) Load() *Snapshot { return s.cur.Load() }

// Publish replaces what source offers: its whole current list of pods and
// the pods it refused itself (past a cap). It reports whether the set
// changed; when it did, a new snapshot is in place before Publish returns
// and every subscriber is told.
func (s *Set) Publish(source string, pods []Pod, refused []Refusal) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := make([]Pod, len(pods))
	for i, p := range pods {
		p.Source = source
		ps[i] = p
	}
	s.sources[source] = published{pods: ps, refused: append([]Refusal(nil), refused...)}
	old := s.cur.Load()
	next := s.merge(old.Version + 1)
	if equal(old, next) {
		return false
	}
	s.cur.Store(next)
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default: // a notice is pending: the subscriber will read the newest
		}
	}
	return true
}

// merge builds the snapshot of the static pods and every source's, at
// version. A static pod wins over a discovered pod of its id; between two
// dynamic sources the one whose name sorts first wins. The caller holds mu
// (or owns s).
func (s *Set) merge(version uint64) *Snapshot {
	taken := make(map[string]bool, len(s.static))
	pods := make([]Pod, 0, len(s.static))
	var refused []Refusal
	for _, p := range s.static {
		if !taken[p.ID] {
			taken[p.ID] = true
			pods = append(pods, p)
		}
	}
	names := make([]string, 0, len(s.sources))
	for name := range s.sources {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		src := s.sources[name]
		for _, p := range src.pods {
			if taken[p.ID] {
				refused = append(refused, Refusal{ID: p.ID, Source: name, Reason: ReasonStatic})
				continue
			}
			taken[p.ID] = true
			pods = append(pods, p)
		}
		refused = append(refused, src.refused...)
	}
	return newSnapshot(version, pods, refused)
}

// Subscribe returns a channel that receives a value after each change
// (several changes may be told once: read Load after each) and a function
// that cancels the subscription.
func (s *Set) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}
}
