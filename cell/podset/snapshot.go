package podset

import "sort"

// Refusal is a pod a source offered that the cell did not take.
type Refusal struct {
	// ID is the pod's id.
	ID string
	// Source is the source that offered it.
	Source string
	// Reason says why, for logs and the state API ("cap": the cell's
	// 256-holder cap was reached; "static": a static pod has the id).
	Reason string
}

// Refusal reasons.
const (
	// ReasonCap refuses a pod past the cell's holder cap.
	ReasonCap = "cap"
	// ReasonStatic refuses a discovered pod whose id a static pod has.
	ReasonStatic = "static"
)

// Snapshot is one immutable version of the pod set. Its slices must not be
// changed; every method is safe for concurrent use.
type Snapshot struct {
	// Version increases by one with every change (the first is 1).
	Version uint64
	// Pods are the pods, sorted by id.
	Pods []Pod
	// Refused are the pods the sources offered and the set refused,
	// sorted by source and id.
	Refused []Refusal

	byID map[string]int
}

func newSnapshot(version uint64, pods []Pod, refused []Refusal) *Snapshot {
	sort.Slice(pods, func(i, j int) bool { return pods[i].ID < pods[j].ID })
	sort.Slice(refused, func(i, j int) bool {
		if refused[i].Source != refused[j].Source {
			return refused[i].Source < refused[j].Source
		}
		return refused[i].ID < refused[j].ID
	})
	s := &Snapshot{Version: version, Pods: pods, Refused: refused, byID: make(map[string]int, len(pods))}
	for i, p := range pods {
		s.byID[p.ID] = i
	}
	return s
}

// Get returns the pod of id.
func (s *Snapshot) Get(id string) (Pod, bool) {
	i, ok := s.byID[id]
	if !ok {
		return Pod{}, false
	}
	return s.Pods[i], true
}

// Has reports whether the set holds id (routable or kept).
func (s *Snapshot) Has(id string) bool {
	_, ok := s.byID[id]
	return ok
}

// Routable reports whether id is in the set and takes new requests.
func (s *Snapshot) Routable(id string) bool {
	i, ok := s.byID[id]
	return ok && s.Pods[i].Routable
}

// Counts returns the number of routable and of kept (not routable) pods.
func (s *Snapshot) Counts() (routable, kept int) {
	for _, p := range s.Pods {
		if p.Routable {
			routable++
		} else {
			kept++
		}
	}
	return routable, kept
}

// equal reports whether two pod lists (sorted by id) and refusal lists
// (sorted) are the same.
func equal(a, b *Snapshot) bool {
	if len(a.Pods) != len(b.Pods) || len(a.Refused) != len(b.Refused) {
		return false
	}
	for i := range a.Pods {
		if a.Pods[i] != b.Pods[i] {
			return false
		}
	}
	for i := range a.Refused {
		if a.Refused[i] != b.Refused[i] {
			return false
		}
	}
	return true
}
