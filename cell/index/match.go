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
	n       int            // groups used
	groups  [MaxPods]Group // by increasing depth
}

// Group is a set of pods that match the same number of leading blocks.
type Group struct {
	Pods  HostBitmap
	Depth int
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

// Lookups returns how many shard lookups the query took.
func (r *MatchResult) Lookups() int { return r.lookups }

// searchDrop returns the first depth in (lo, n) at which some pod of set
// does not hold the chain's block, with that block's holders; n and an empty
// set when every pod of set holds the rest of the chain. Every pod of set
// holds chain[lo]. It searches 4-ary while the interval is wide (three
// overlapping lookups per round), then binary.
func (ix *Index) searchDrop(chain []BlockHash, set HostBitmap, lo, n int, r *MatchResult) (int, HostBitmap) {
	l, hi := lo, n
	var atHi HostBitmap
	for wideSearch && hi-l >= 8 {
		q := (hi - l) / 4
		p1, p2, p3 := l+q, l+2*q, l+3*q
		h1, h2, h3 := ix.lookup3(chain[p1], chain[p2], chain[p3], r)
		switch {
		case !set.SubsetOf(h1):
			hi, atHi = p1, h1
		case !set.SubsetOf(h2):
			l, hi, atHi = p1, p2, h2
		case !set.SubsetOf(h3):
			l, hi, atHi = p2, p3, h3
		default:
			l = p3
		}
	}
	for hi-l > 1 {
		mid := int(uint(l+hi) >> 1)
		h := ix.lookup(chain[mid], r)
		if set.SubsetOf(h) {
			l = mid
		} else {
			hi, atHi = mid, h
		}
	}
	return hi, atHi
}

// wideSearch turns the 4-ary rounds on; benchmarks turn it off to compare.
var wideSearch = true

// Match computes, for every live pod, the number of leading blocks of chain
// it holds, and writes the answer into r. It takes no lock and allocates
// nothing, and may run concurrently with writes: each lookup sees one shard
// at one instant, but the query as a whole is not a snapshot of the index.
//
// Because holders are prefix-closed (see the package doc), the set of pods
// still matching only shrinks with depth. Match therefore binary-searches for
// the depths where that set shrinks, instead of walking the chain: with K
// distinct answer depths it takes O(K log N) lookups for a chain of N blocks,
// whatever the number of pods.
func (ix *Index) Match(chain []BlockHash, r *MatchResult) {
	r.alive = ix.Alive()
	r.matched = HostBitmap{}
	r.n = 0
	r.lookups = 0
	n := len(chain)
	if n == 0 || r.alive.IsEmpty() {
		return
	}
	// Invariant: every pod in set holds chain[0..lo], and cur = holders of
	// chain[lo] restricted to set.
	set := r.alive
	cur := ix.lookup(chain[0], r).And(set)
	lo := 0
	for {
		set = cur
		if set.IsEmpty() {
			break
		}
		// Find the first depth hi in (lo, n) at which some pod of set drops
		// out; hi == n when none does.
		hi, atHi := ix.searchDrop(chain, set, lo, n, r)
		// Pods of set that miss chain[hi] match exactly hi blocks.
		cur = atHi.And(set)
		r.setDepth(set.AndNot(cur), hi)
		if hi == n {
			break
		}
		lo = hi
	}
}

// setDepth records depth d for every pod in b. Depths are recorded in
// increasing order.
func (r *MatchResult) setDepth(b HostBitmap, d int) {
	if b.IsEmpty() {
		return
	}
	r.matched = r.matched.Or(b)
	r.groups[r.n] = Group{Pods: b, Depth: d}
	r.n++
}
