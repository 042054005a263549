package index

// pageProbe is one page read of a paged query round: the page in, and the
// state of the optimistic read in between.
type pageProbe struct {
	m   int32 // page index: positions [m*PageSize, (m+1)*PageSize)
	s   *pshard
	d   *ptable
	seq uint64
	i   uint64
	k0  uint64
	sum pageSum // the page's directory slot, read in readPages
}

// pageSum is what a query reads of a page's directory slot: its bucket
// (nil when the page is absent) and its summary (see pslot).
type pageSum struct {
	p         *pentry
	hLast     uint64
	s0, sLast HostBitmap
}

// load reads slot ps (nil: an absent page).
func (sum *pageSum) load(ps *pslot) {
	if ps == nil {
		*sum = pageSum{}
		return
	}
	sum.p = ps.b.Load()
	sum.s0, sum.hLast, sum.sLast = ps.s0.load(), ps.hLast.Load(), ps.sLast.load()
}

// matchPaged is match for the paged layout. It bisects over pages instead
// of positions: a page read gives the holders of all its positions at once,
// so it pins every drop inside the page, and the bisection only has to find
// the pages with drops. A chain of N blocks has P = N/PageSize pages; with K
// pages holding drops a query reads about K log(P/K) pages in about
// log4(P) + 1 rounds.
func (ix *Index) matchPaged(chain []BlockHash, r *MatchResult) {
	r.alive = ix.Alive()
	r.matched = HostBitmap{}
	r.n, r.lookups, r.rounds = 0, 0, 0
	n := len(chain)
	if n == 0 || r.alive.IsEmpty() {
		return
	}
	np := int32((n + PageSize - 1) / PageSize)
	pp := r.pprobe[:1]
	pp[0].m = 0
	if np > 1 {
		pp = append(pp, pageProbe{m: np - 1})
	}
	ix.readPages(chain, pp, r)
	r.rounds = 1
	first, end0 := ix.foldPage(chain, &pp[0], r.alive, HostBitmap{}, r)
	if first.IsEmpty() {
		return
	}
	if np == 1 {
		r.addGroup(end0, n)
		r.sortGroups()
		return
	}
	startL, endL := ix.foldPage(chain, &pp[1], end0, HostBitmap{}, r)
	r.addGroup(endL, n)
	// Spans are over page indices: atLo is the set at the end of page lo,
	// atHi the set at the start of page hi, atLo ⊋ atHi.
	cur := r.cur[:0]
	if end0 != startL {
		cur = append(cur, span{lo: 0, hi: np - 1, atLo: end0, atHi: startL})
	}
	for len(cur) > 0 {
		arity := int32(pagedArity)
		if len(cur)*(pagedArity-1) > len(r.pprobe) {
			arity = 2
		}
		pp = r.pprobe[:0]
		for i := range cur {
			s := &cur[i]
			w := s.hi - s.lo
			m := min(arity-1, w-1)
			for j := int32(1); j <= m; j++ {
				pp = append(pp, pageProbe{m: s.lo + w*j/(m+1)})
			}
		}
		if len(pp) > 0 {
			ix.readPages(chain, pp, r)
			r.rounds++
		}
		next := r.next[:0]
		p := 0
		for _, s := range cur {
			w := s.hi - s.lo
			if w == 1 {
				// Pods holding the end of page lo but not the start of page
				// hi match hi pages.
				r.addGroup(s.atLo.AndNot(s.atHi), int(s.hi)*PageSize)
				continue
			}
			m := min(arity-1, w-1)
			lo, atLo := s.lo, s.atLo
			for j := int32(1); j <= m; j++ {
				start, end := ix.foldPage(chain, &pp[p], atLo, s.atHi, r)
				if start != atLo {
					next = append(next, span{lo: lo, hi: pp[p].m, atLo: atLo, atHi: start})
				}
				lo, atLo = pp[p].m, end
				p++
			}
			if atLo != s.atHi {
				next = append(next, span{lo: lo, hi: s.hi, atLo: atLo, atHi: s.atHi})
			}
		}
		copy(r.cur[:len(next)], next)
		cur = r.cur[:len(next)]
	}
	r.sortGroups()
}

// pagedArity is searchArity for pages: how many parts a round splits each
// open span of pages into.
var pagedArity = 4

// readPages starts the reads of the pages in ps: first every directory
// probe's home slot, which holds the page's summary, then the buckets of
// the pages the summary cannot answer for. Each phase's loads are
// independent of each other, so the core overlaps their misses; a round
// costs one memory round trip, two when a page has a drop inside.
func (ix *Index) readPages(chain []BlockHash, ps []pageProbe, r *MatchResult) {
	r.lookups += len(ps)
	for i := range ps {
		p := &ps[i]
		k := uint64(chain[int(p.m)*PageSize])
		p.s = &ix.pshards[shardOf(k)]
		p.seq = p.s.seq.Load()
		p.d = p.s.dir.Load()
		p.i = p.d.home(k)
		p.k0 = p.d.slots[p.i].key.Load() // the first miss
	}
	var acc uint64
	for i := range ps {
		p := &ps[i]
		p.sum = pageSum{}
		if p.seq&1 != 0 {
			continue
		}
		base := int(p.m) * PageSize
		p.sum.load(p.d.findFrom(uint64(chain[base]), p.i, p.k0))
		if p.sum.p == nil {
			continue
		}
		// A page whose summary answers for its last position and shows no
		// drop needs nothing else. Otherwise the second miss: every line of
		// the bucket, loaded together, for foldPage's bisection inside it.
		last := min(len(chain)-base, PageSize)
		if last == PageSize && p.sum.hLast == uint64(chain[base+last-1]) && p.sum.s0 == p.sum.sLast {
			continue
		}
		b := bucketOf(p.sum.p)
		n, _ := bucketHeader(b)
		for j := 0; j <= n; j += 4 {
			acc += b[j].key.Load()
		}
	}
	r.sink += acc // keeps the loads
}

// foldPage reads page p.m of chain (retrying if a writer moved its shard)
// and folds its holders into r: atLo is the set holding the position
// before the page (every live pod for page 0), atHi a set known to hold
// past the page. Pods that drop inside the page get their groups; it
// returns the sets holding the page's first and last positions, both
// between atHi and atLo by the prefix-closed contract.
func (ix *Index) foldPage(chain []BlockHash, p *pageProbe, atLo, atHi HostBitmap, r *MatchResult) (start, end HostBitmap) {
	base := int(p.m) * PageSize
	q := chain[base:min(len(chain), base+PageSize)]
	n0, matched0 := r.n, r.matched
	if p.seq&1 == 0 {
		start, end = p.s.foldOnce(&p.sum, q, base, atLo, atHi, r)
		if p.s.seq.Load() == p.seq {
			return start, end
		}
		r.n, r.matched = n0, matched0
	}
	key := uint64(q[0])
	p.s.readStable(func() {
		r.n, r.matched = n0, matched0
		var sum pageSum
		sum.load(p.s.dir.Load().find(key))
		start, end = p.s.foldOnce(&sum, q, base, atLo, atHi, r)
	})
	return start, end
}

// foldOnce is one optimistic pass of foldPage over bucket bp. It finds the
// entries of q's blocks as it needs them (a bucket holds the page's blocks
// of every chain through it; an entry is q's when its hash is q's at its
// offset) while it bisects over the page's positions, in cache now, for the
// drops: a page whose holders do not change costs two entries and two
// decodes, not one per position.
func (s *pshard) foldOnce(sum *pageSum, q []BlockHash, base int, atLo, atHi HostBitmap, r *MatchResult) (start, end HostBitmap) {
	if sum.p == nil {
		return atHi, atHi
	}
	var b []pentry
	n := -1 // the bucket is not loaded yet
	ordered := false
	var found uint32
	scanned := false
	words := &r.words
	// word returns the holder word of q[o] from the bucket. A page's blocks
	// are usually appended in chain order, so entry o+1 is tried first, and
	// in an ordered bucket it is the only candidate; only an unordered one
	// (branches, removals in the middle) gets scanned, once. at answers
	// the first position and, when the summary tracks q's block there, the
	// last from the summary.
	word := func(o int) (uint64, bool) {
		if n < 0 {
			b = bucketOf(sum.p)
			n, ordered = bucketHeader(b)
		}
		if j := o + 1; j <= n && b[j].key.Load() == uint64(q[o]) {
			return b[j].val.Load(), true
		}
		if ordered {
			return 0, false // the entry of offset o would be entry o+1
		}
		if !scanned {
			scanned = true
			for j := 1; j <= n; j++ {
				w := b[j].val.Load()
				k := wordOff(w)
				if k < len(q) && b[j].key.Load() == uint64(q[k]) {
					words[k] = w
					found |= 1 << k
				}
			}
		}
		return words[o], found&(1<<o) != 0
	}
	at := func(o int, lo HostBitmap) HostBitmap {
		switch {
		case o == 0:
			return sum.s0.And(lo).Or(atHi)
		case o == PageSize-1 && sum.hLast == uint64(q[o]):
			return sum.sLast.And(lo).Or(atHi)
		}
		w, ok := word(o)
		if !ok {
			return atHi
		}
		return s.decode(w).And(lo).Or(atHi) // monotone by contract
	}
	last := len(q) - 1
	start = at(0, atLo)
	if last == 0 || start == atHi {
		return start, start
	}
	end = at(last, start)
	if end == start {
		return start, end
	}
	// A drop inside the page (readPages loaded the bucket's lines): bisect
	// [0, last] for the positions where the set shrinks.
	stack := r.pstack[:0]
	stack = append(stack, span{lo: 0, hi: int32(last), atLo: start, atHi: end})
	for len(stack) > 0 {
		sp := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if sp.hi-sp.lo == 1 {
			r.addGroup(sp.atLo.AndNot(sp.atHi), base+int(sp.hi))
			continue
		}
		mid := (sp.lo + sp.hi) / 2
		m := at(int(mid), sp.atLo).Or(sp.atHi)
		if m != sp.atHi {
			stack = append(stack, span{lo: mid, hi: sp.hi, atLo: m, atHi: sp.atHi})
		}
		if m != sp.atLo {
			stack = append(stack, span{lo: sp.lo, hi: mid, atLo: sp.atLo, atHi: m})
		}
	}
	return start, end
}
