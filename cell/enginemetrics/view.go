package enginemetrics

import "time"

// Snapshot is the newest account of one pod.
type Snapshot struct {
	// Sample is the last good scrape's reading.
	Sample
	// At is when the last good scrape finished (zero: none yet).
	At time.Time
	// Err is the last scrape's error ("" when it succeeded).
	Err string
	// Failures counts the scrapes that failed in a row.
	Failures int
	// RouterRequests and RouterBlocks are the router's own count for the
	// pod (requests in flight and their KV blocks) around the scrape: the
	// larger of its count before the request and after the answer
	// (Hooks.RouterLoad; 0 without it). The engine's count minus it is the
	// traffic the router did not route, free of the scrape's lag.
	RouterRequests, RouterBlocks int
}

// View is the cell's engine metrics at one moment: an immutable map from
// pod id to snapshot, read by the plug-ins. The zero View knows no pod.
type View struct {
	*published
	now   time.Time
	stale time.Duration
}

// published is what one scrape round produced; it never changes.
type published struct {
	pods     map[string]*Snapshot
	adapters map[string]bool // every adapter some pod runs or waits for
}

// publish indexes pods for views.
func publish(pods map[string]*Snapshot) *published {
	p := &published{pods: pods, adapters: map[string]bool{}}
	for _, s := range pods {
		for _, a := range s.RunningLoRA {
			p.adapters[a] = true
		}
		for _, a := range s.WaitingLoRA {
			p.adapters[a] = true
		}
	}
	return p
}

// NewView returns a view of pods as of now, where snapshots older than
// stale are not fresh. The view keeps pods; do not modify it afterwards.
func NewView(pods map[string]*Snapshot, now time.Time, stale time.Duration) View {
	return View{published: publish(pods), now: now, stale: stale}
}

// Now is the time the view judges freshness at.
func (v View) Now() time.Time { return v.now }

// AnyAdapter reports whether some pod (fresh or not) runs or waits for
// adapter: when none does, adapter affinity has nothing to prefer.
func (v View) AnyAdapter(adapter string) bool {
	return v.published != nil && v.adapters[adapter]
}

// Load returns pod's snapshot and whether it is fresh: a good scrape no
// older than the staleness bound. A pod with no snapshot returns nil.
func (v View) Load(pod string) (*Snapshot, bool) {
	if v.published == nil {
		return nil, false
	}
	s := v.pods[pod]
	if s == nil {
		return nil, false
	}
	return s, s.fresh(v.now, v.stale)
}

// fresh reports whether s has a good scrape no older than stale at now.
func (s *Snapshot) fresh(now time.Time, stale time.Duration) bool {
	return !s.At.IsZero() && now.Sub(s.At) <= stale
}

// Age is how old the last good scrape is at the view's time (-1: none).
func (v View) Age(s *Snapshot) time.Duration {
	if s == nil || s.At.IsZero() {
		return -1
	}
	return v.now.Sub(s.At)
}

// Pods calls f with every pod's snapshot and freshness, in no order.
func (v View) Pods(f func(pod string, s *Snapshot, fresh bool)) {
	if v.published == nil {
		return
	}
	for id, s := range v.pods {
		f(id, s, s.fresh(v.now, v.stale))
	}
}

// LoadBlocks estimates the KV blocks the engine's requests occupy, running
// and waiting, given its capacity in blocks (see the package doc): the
// blocks in use, scaled by (running + waiting) / running. With no usage or
// no capacity, or no running request, it returns false.
func (s *Sample) LoadBlocks(capacity float64) (float64, bool) {
	if !s.HasKVUsage || capacity <= 0 {
		return 0, false
	}
	used := s.KVUsage * capacity
	if !s.HasQueue || s.Running <= 0 {
		return used, true
	}
	return used * (s.Running + s.Waiting) / s.Running, true
}

// HasAdapter reports how the engine holds adapter: 2 running, 1 waiting
// (being loaded), 0 not at all.
func (s *Sample) HasAdapter(adapter string) int {
	for _, a := range s.RunningLoRA {
		if a == adapter {
			return 2
		}
	}
	for _, a := range s.WaitingLoRA {
		if a == adapter {
			return 1
		}
	}
	return 0
}
