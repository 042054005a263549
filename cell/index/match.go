package index

// MatchResult is the answer to a Match: each live pod's matched prefix
// depth. It is a fixed-size value meant to be reused across queries, so a
// query allocates nothing. The zero value is an empty result.
//
// The answer is kept as groups, one per distinct depth (K of them), not as
// a depth per pod: recording it costs O(K), not O(pods), and a scorer can
// score a whole group at once.
type MatchResult struct {
	alive   HostBitmap
	matched HostBitmap // pods with depth >= 1
	lookups int
	rounds  int
	n       int            // groups used
	groups  [MaxPods]Group // by increasing depth

	// Work space of the search, kept here so that Match allocates nothing.
	cur, next [MaxPods + 1]span
	probe     [MaxPods + 1]probeSlot
}

// Group is a set of pods that match the same number of leading blocks.
type Group struct {
	Pods  HostBitmap
	Depth int
}

// span is an interval [lo, hi] of chain positions whose holder sets are
// known at both ends, with a drop between them: atLo ⊋ atHi.
type span struct {
	lo, hi     int32
	atLo, atHi HostBitmap
}

// Groups returns the pods that matched at least one block, grouped by depth,
// shallowest first. The slice aliases r and is valid until r is reused.
func (r *MatchResult) Groups() []Group { return r.groups[:r.n] }

// Depth returns how many leading blocks of the queried chain pod s holds: 0
// for pods that are not alive or hold not even the first block. It costs
// O(K) for K distinct depths.
func (r *MatchResult) Depth(s Slot) int {
	if !r.matched.Has(s) {
		return 0
	}
	for i := r.n - 1; i >= 0; i-- {
		if r.groups[i].Pods.Has(s) {
			return r.groups[i].Depth
		}
	}
	return 0
}

// Alive returns the set of live pods the query saw.
func (r *MatchResult) Alive() HostBitmap { return r.alive }

// Matched returns the pods that hold at least the first block.
func (r *MatchResult) Matched() HostBitmap { return r.matched }

// Best returns a pod with the deepest match, the lowest slot on ties; ok is
// false when no pod holds the first block.
func (r *MatchResult) Best() (s Slot, depth int, ok bool) {
	if r.n == 0 {
		return 0, 0, false
	}
	g := &r.groups[r.n-1]
	s, _ = g.Pods.First()
	return s, g.Depth, true
}

// Lookups returns how many shard lookups the query took; Rounds how many
// rounds of parallel lookups.
func (r *MatchResult) Lookups() int { return r.lookups }

// Rounds returns how many rounds of overlapping lookups the query took: its
// latency is about Rounds memory round trips.
func (r *MatchResult) Rounds() int { return r.rounds }

// Match computes, for every live pod, the number of leading blocks of chain
// it holds, and writes the answer into r. It takes no lock and allocates
// nothing, and may run concurrently with writes: each lookup sees one shard
// at one instant, but the query as a whole is not a snapshot of the index.
//
// Because holders are prefix-closed (see the package doc), the set of pods
// holding chain[d] only shrinks as d grows. Match finds the depths where it
// shrinks by bisection: it knows the sets at both ends of the chain, and
// splits every interval whose end sets differ at its middle, until each drop
// is pinned to one position. With K distinct depths in a chain of N blocks
// that is about K log(N/K) lookups, whatever the number of pods. The
// intervals of one round are independent, so each round issues all its
// lookups before it looks at any result: their cache misses overlap, and a
// query costs about log N memory round trips rather than K log N.
func (ix *Index) Match(chain []BlockHash, r *MatchResult) {
	r.alive = ix.Alive()
	r.matched = HostBitmap{}
	r.n, r.lookups, r.rounds = 0, 0, 0
	n := len(chain)
	if n == 0 || r.alive.IsEmpty() {
		return
	}
	first := ix.lookup(chain[0], r).And(r.alive)
	if first.IsEmpty() {
		return
	}
	last := first
	if n > 1 {
		last = ix.lookup(chain[n-1], r).And(first)
	}
	r.rounds = 1
	if !last.IsEmpty() {
		r.addGroup(last, n)
	}
	if first == last {
		return
	}
	// Invariant: every span has atLo ⊋ atHi, atLo ⊆ first.
	cur := r.cur[:0]
	cur = append(cur, span{lo: 0, hi: int32(n - 1), atLo: first, atHi: last})
	for len(cur) > 0 {
		// Spans of width one pin their drop; the others probe their middle.
		p := 0
		for i := range cur {
			if cur[i].hi-cur[i].lo > 1 {
				r.probe[p].h = chain[(cur[i].lo+cur[i].hi)/2]
				p++
			}
		}
		if p > 0 {
			ix.lookupMany(r.probe[:p], r)
			r.rounds++
		}
		next := r.next[:0]
		p = 0
		for _, s := range cur {
			if s.hi-s.lo == 1 {
				// Pods holding chain[lo] but not chain[hi] match hi blocks.
				r.addGroup(s.atLo.AndNot(s.atHi), int(s.hi))
				continue
			}
			mid := (s.lo + s.hi) / 2
			atMid := r.probe[p].b.And(s.atLo).Or(s.atHi) // monotone by contract
			p++
			if atMid != s.atLo {
				next = append(next, span{lo: s.lo, hi: mid, atLo: s.atLo, atHi: atMid})
			}
			if atMid != s.atHi {
				next = append(next, span{lo: mid, hi: s.hi, atLo: atMid, atHi: s.atHi})
			}
		}
		// Swap buffers: next becomes cur.
		copy(r.cur[:len(next)], next)
		cur = r.cur[:len(next)]
	}
	r.sortGroups()
}

// addGroup records depth d for the pods in b.
func (r *MatchResult) addGroup(b HostBitmap, d int) {
	if b.IsEmpty() {
		return
	}
	r.matched = r.matched.Or(b)
	r.groups[r.n] = Group{Pods: b, Depth: d}
	r.n++
}

// sortGroups orders the groups by depth (insertion sort: K is small and
// the groups come nearly sorted).
func (r *MatchResult) sortGroups() {
	g := r.groups[:r.n]
	for i := 1; i < len(g); i++ {
		for j := i; j > 0 && g[j].Depth < g[j-1].Depth; j-- {
			g[j], g[j-1] = g[j-1], g[j]
		}
	}
}
