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

	// Learned holdings (see Learner): the pods whose depth includes learned
	// blocks, those of them in approximate mode, and for the others the
	// depth events confirmed.
	learned, approx HostBitmap
	exact           [MaxPods]int32

	// Work space of the search, kept here so that Match allocates nothing.
	cur, next [maxSpans]span
	probe     [4 * maxSpans]probeSlot
	pprobe    [4 * maxSpans]pageProbe // the paged layout's probes
	words     [PageSize]uint64        // one page's holder words
	pstack    [PageSize]span          // the bisection inside a page
	sink      uint64                  // keeps the paged layout's touching loads
}

// maxSpans bounds the open intervals of a round: each holds at least one
// drop of the pod set, and there are at most MaxPods drops.
const maxSpans = MaxPods + 1

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

// ExactDepth returns how many leading blocks of the queried chain the
// engine's events say pod s holds: 0 for a pod in approximate mode, Depth
// less the speculative blocks at the end of its match for a pod that
// SplitLearned was asked about, and Depth for any other.
func (r *MatchResult) ExactDepth(s Slot) int {
	if r.learned.Has(s) {
		return int(r.exact[s])
	}
	return r.Depth(s)
}

// Learned returns the pods whose matched depth includes learned blocks:
// the approximate ones, and the ones SplitLearned found speculative blocks
// for; see Learner.
func (r *MatchResult) Learned() HostBitmap { return r.learned }

// Approximate returns the pods answered by the approximate index: pods
// without events, whose whole depth is learned from routing.
func (r *MatchResult) Approximate() HostBitmap { return r.approx }

// markLearned records that the first exact blocks of pod s's depth are
// exact and the rest learned; approximate marks a pod without events.
func (r *MatchResult) markLearned(s Slot, exact int, approximate bool) {
	r.learned = r.learned.Set(s)
	r.exact[s] = int32(exact)
	if approximate {
		r.approx = r.approx.Set(s)
	}
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
//
// With a Learner attached, learned blocks count like any other, and the
// result says which pods are answered by the approximate index
// (Approximate), at the cost of one bitmap test. Which part of a pod's
// depth is speculative is only known after SplitLearned.
func (ix *Index) Match(chain []BlockHash, r *MatchResult) {
	r.learned, r.approx = HostBitmap{}, HostBitmap{}
	if ix.pshards != nil {
		ix.matchPaged(chain, r)
	} else {
		ix.match(chain, r)
	}
	if l := ix.learn.Load(); l != nil && r.n > 0 {
		if a := l.approxSet().And(r.matched); !a.IsEmpty() {
			r.approx, r.learned = a, a
			a.ForEach(func(s Slot) { r.exact[s] = 0 })
		}
	}
}

// SplitLearned completes r, the answer of Match for chain, for the pods in
// pods: for each that holds speculative blocks at the end of its match, it
// records how many leading blocks are exact (ExactDepth) and marks it in
// Learned. It costs a lock and a map lookup per such pod with learned
// blocks, and a bisection (about log2 of its depth lookups) for each whose
// match ends in learned blocks; ask only about the pods you need.
func (ix *Index) SplitLearned(chain []BlockHash, r *MatchResult, pods HostBitmap) {
	if l := ix.learn.Load(); l != nil && r.n > 0 {
		l.splitLearned(chain, r, pods)
	}
}

// match is the bisection of Match.
func (ix *Index) match(chain []BlockHash, r *MatchResult) {
	r.alive = ix.Alive()
	r.matched = HostBitmap{}
	r.n, r.lookups, r.rounds = 0, 0, 0
	n := len(chain)
	if n == 0 || r.alive.IsEmpty() {
		return
	}
	// The two ends are looked up together, in one round trip: a chain
	// whose first block nobody holds wastes one lookup, and every other
	// chain saves a dependent miss.
	var first, last HostBitmap
	if n == 1 {
		first = ix.lookup(chain[0], r).And(r.alive)
		last = first
	} else {
		r.probe[0].h, r.probe[1].h = chain[0], chain[n-1]
		ix.lookupMany(r.probe[:2], r)
		first = r.probe[0].b.And(r.alive)
		last = r.probe[1].b.And(first)
	}
	r.rounds = 1
	if first.IsEmpty() {
		return
	}
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
		// Spans of width one pin their drop; the others get up to
		// arity-1 evenly spaced probes, all issued together. A round with
		// more spans than the probe buffer holds at that arity bisects.
		arity := int32(searchArity)
		if len(cur)*(searchArity-1) > len(r.probe) {
			arity = 2
		}
		p := 0
		for i := range cur {
			s := &cur[i]
			w := s.hi - s.lo
			m := min(arity-1, w-1)
			for j := int32(1); j <= m; j++ {
				r.probe[p].h = chain[s.lo+w*j/(m+1)]
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
			w := s.hi - s.lo
			if w == 1 {
				// Pods holding chain[lo] but not chain[hi] match hi blocks.
				r.addGroup(s.atLo.AndNot(s.atHi), int(s.hi))
				continue
			}
			m := min(arity-1, w-1)
			lo, atLo := s.lo, s.atLo
			for j := int32(1); j <= m+1; j++ {
				var pos int32
				var at HostBitmap
				if j <= m {
					pos = s.lo + w*j/(m+1)
					at = r.probe[p].b.And(atLo).Or(s.atHi) // monotone by contract
					p++
				} else {
					pos, at = s.hi, s.atHi
				}
				if at != atLo {
					next = append(next, span{lo: lo, hi: pos, atLo: atLo, atHi: at})
				}
				lo, atLo = pos, at
			}
		}
		// Swap buffers: next becomes cur.
		copy(r.cur[:len(next)], next)
		cur = r.cur[:len(next)]
	}
	r.sortGroups()
}

// searchArity is how many parts a round splits each open interval into:
// searchArity-1 probes per interval, issued together. Wider rounds take more
// lookups but fewer dependent memory round trips; see BenchmarkArity.
var searchArity = 4

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
