package index

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// This file checks the Learner against a naive reference model: per pod,
// the set of exact blocks and a plain map of learned blocks with their kind,
// expiry and last refresh, whose rules are applied by rescanning the map
// (descendants are found through the test's prefix tree, eviction order by
// sorting).

type refLearned struct {
	kind    uint8
	expires int64
	seq     int // the operation that refreshed it last
	depth   int
}

type refLearnPod struct {
	exact   map[BlockHash]bool
	learned map[BlockHash]*refLearned
	approx  bool
}

type refLearner struct {
	tr     *tree
	node   map[BlockHash]int // hash -> tree node
	pods   map[Slot]*refLearnPod
	cfg    LearnConfig
	seq    int
	maxPer int
}

func (m *refLearner) pod(s Slot) *refLearnPod { return m.pods[s] }

// ancestorOf reports whether a is a proper ancestor of b in the tree.
func (m *refLearner) ancestorOf(a, b BlockHash) bool {
	for n := m.tr.parent[m.node[b]]; n >= 0; n = m.tr.parent[n] {
		if m.tr.hash[n] == a {
			return true
		}
	}
	return false
}

// drop removes learned block h and every learned block below it.
func (m *refLearner) drop(p *refLearnPod, h BlockHash) {
	for x := range p.learned {
		if x == h || m.ancestorOf(h, x) {
			delete(p.learned, x)
		}
	}
}

func (m *refLearner) held(p *refLearnPod, h BlockHash) bool {
	return p.exact[h] || p.learned[h] != nil
}

func (m *refLearner) learn(s Slot, chain []BlockHash, k uint8, now int64) {
	p := m.pod(s)
	if p == nil || (k == kindApprox && !p.approx) || (k == kindSpec && m.cfg.SpeculativeTTL <= 0) {
		return
	}
	m.seq++
	ttl := func(kind uint8) int64 {
		if kind == kindApprox {
			return now + int64(m.cfg.ApproximateTTL)
		}
		return now + int64(m.cfg.SpeculativeTTL)
	}
	d := 0
	for d < len(chain) && m.held(p, chain[d]) {
		d++
	}
	for i, h := range chain {
		if i < d {
			if e := p.learned[h]; e != nil {
				kind := k
				if e.kind == kindApprox {
					kind = kindApprox
				}
				*e = refLearned{kind: kind, expires: ttl(kind), seq: m.seq, depth: i + 1}
			}
			continue
		}
		p.learned[h] = &refLearned{kind: k, expires: ttl(k), seq: m.seq, depth: i + 1}
	}
	// Each kind is bounded on its own, approximate blocks first.
	for _, kind := range []uint8{kindApprox, kindSpec} {
		for {
			n := 0
			var victim BlockHash
			var best *refLearned
			for h, e := range p.learned {
				if e.kind != kind {
					continue
				}
				n++
				if best == nil || e.seq < best.seq || (e.seq == best.seq && e.depth > best.depth) {
					best, victim = e, h
				}
			}
			if n <= m.maxPer {
				break
			}
			m.drop(p, victim)
		}
	}
}

func (m *refLearner) expire(now int64) {
	for _, p := range m.pods {
		for h, e := range p.learned {
			if e.expires <= now {
				m.drop(p, h)
			}
		}
	}
}

// exactOps applies exact stores and removals of one batch.
func (m *refLearner) exactOps(s Slot, stores, removes []BlockHash) {
	p := m.pod(s)
	if p == nil {
		return
	}
	for _, h := range stores {
		p.exact[h] = true
		delete(p.learned, h) // confirmed
	}
	for _, h := range removes {
		delete(p.exact, h)
		m.drop(p, h)
	}
	if p.approx && len(stores)+len(removes) > 0 {
		p.approx = false
		for h, e := range p.learned {
			if e.kind == kindApprox {
				m.drop(p, h)
			}
		}
	}
}

func (m *refLearner) depths(s Slot, chain []BlockHash) (depth, exact int, approx bool) {
	p := m.pod(s)
	if p == nil {
		return 0, 0, false
	}
	for depth < len(chain) && m.held(p, chain[depth]) {
		depth++
	}
	for exact < depth && p.exact[chain[exact]] {
		exact++
	}
	if p.approx && depth > 0 {
		return depth, 0, true
	}
	return depth, exact, false
}

// stored is what StoredDepth answers: the exact depth of a pod with
// events, the leading exact or approximate blocks of a pod without.
func (m *refLearner) stored(s Slot, chain []BlockHash) int {
	p := m.pod(s)
	if p == nil {
		return 0
	}
	if !p.approx {
		_, exact, _ := m.depths(s, chain)
		return exact
	}
	n := 0
	for n < len(chain) && (p.exact[chain[n]] || p.learned[chain[n]] != nil && p.learned[chain[n]].kind == kindApprox) {
		n++
	}
	return n
}

// TestLearnerMatchesReferenceModel applies random interleavings of exact
// stores and removals, speculative and approximate learning, expiry under
// an injected clock, mode changes, clears, kills and queries to an index
// with a learner and to the reference model, and compares every answer
// (Depth, ExactDepth, Approximate, StoredDepth) and, at the end, the whole
// content.
func TestLearnerMatchesReferenceModel(t *testing.T) {
	var total learnTotals
	defer func() {
		// The run must have exercised every rule.
		if total.Speculated == 0 || total.Learned == 0 || total.Confirmed == 0 || total.Expired == 0 ||
			total.Evicted == 0 || total.Cut == 0 || total.Dropped == 0 || total.StoredBelowDepth == 0 {
			t.Errorf("a rule was never exercised: %+v", total)
		}
	}()
	for _, lay := range testLayouts {
		t.Run(string(lay), func(t *testing.T) { testLearnerMatchesReference(t, lay, &total) })
	}
}

func testLearnerMatchesReference(t *testing.T, lay Layout, total *learnTotals) {
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		// Odd seeds grow deep chains that span pages of the paged layout.
		tr := newTreeShape(rng, 300, seed%2 == 1)
		ixCfg := DefaultConfig()
		ixCfg.Layout = lay
		ix := newTestIndex(t, ixCfg)
		cfg := LearnConfig{SpeculativeTTL: 2 * time.Second, ApproximateTTL: 20 * time.Second, MaxBlocksPerSlot: 24}
		if seed == 3 {
			cfg.SpeculativeTTL = 0 // speculation off
		}
		l, err := NewLearner(ix, cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := &refLearner{tr: tr, node: map[BlockHash]int{}, pods: map[Slot]*refLearnPod{}, cfg: cfg, maxPer: 24}
		for i, h := range tr.hash {
			m.node[h] = i
		}
		now := time.Unix(1_000_000, 0)
		nextID := 0
		register := func(approx bool) {
			s, err := ix.Register("pod-" + itoa(nextID))
			nextID++
			if err != nil {
				return
			}
			m.pods[s] = &refLearnPod{exact: map[BlockHash]bool{}, learned: map[BlockHash]*refLearned{}}
			if approx {
				l.SetApproximate(s, true, 0)
				m.pods[s].approx = true
			}
		}
		for i := 0; i < 12; i++ {
			register(i%3 == 0)
		}
		live := func() []Slot {
			var out []Slot
			for s := range m.pods {
				out = append(out, s)
			}
			sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
			return out
		}
		var r MatchResult
		for step := 0; step < 4000; step++ {
			pods := live()
			if len(pods) == 0 {
				register(rng.IntN(2) == 0)
				continue
			}
			s := pods[rng.IntN(len(pods))]
			p := m.pods[s]
			node := rng.IntN(len(tr.hash))
			path := tr.path(node)
			switch op := rng.IntN(100); {
			case op < 22: // speculate
				l.Speculate(s, path, now)
				m.learn(s, path, kindSpec, now.UnixNano())
			case op < 37: // first token at an approximate pod
				l.Touch(s, path, now)
				m.learn(s, path, kindApprox, now.UnixNano())
			case op < 52: // exact store along a path whose prefix the pod holds exactly
				nodes := pathNodes(tr, node)
				k := 0
				for k < len(nodes) && p.exact[tr.hash[nodes[k]]] {
					k++
				}
				if p.approx && rng.IntN(3) != 0 {
					continue // approximate pods rarely start publishing
				}
				end := min(len(path), k+1+rng.IntN(5))
				from := max(0, k-rng.IntN(2))
				stores := path[from:end]
				ix.Apply(chainOps(OpStore, s, path, from, end))
				m.exactOps(s, stores, nil)
			case op < 62: // exact removal of a block and the pod's exact descendants
				var hs []BlockHash
				for h := range p.exact {
					hs = append(hs, h)
				}
				if len(hs) == 0 {
					continue
				}
				sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
				victim := hs[rng.IntN(len(hs))]
				rm := []BlockHash{victim}
				for _, h := range hs {
					if m.ancestorOf(victim, h) {
						rm = append(rm, h)
					}
				}
				rng.Shuffle(len(rm), func(i, j int) { rm[i], rm[j] = rm[j], rm[i] })
				rmNodes := make([]int, len(rm))
				for i, h := range rm {
					rmNodes[i] = m.node[h]
				}
				ix.Apply(tr.placeOps(OpRemove, s, rmNodes))
				m.exactOps(s, nil, rm)
			case op < 70: // time passes, expiry
				now = now.Add(time.Duration(rng.IntN(600)) * time.Millisecond)
				if rng.IntN(10) == 0 {
					now = now.Add(cfg.ApproximateTTL)
				}
				l.Expire(now)
				m.expire(now.UnixNano())
			case op < 72: // clear (an engine restart)
				ix.ClearPod(s)
				p.exact, p.learned = map[BlockHash]bool{}, map[BlockHash]*refLearned{}
			case op < 74: // mode change
				approx := !p.approx
				l.SetApproximate(s, approx, 0)
				if p.approx && !approx {
					for h, e := range p.learned {
						if e.kind == kindApprox {
							m.drop(p, h)
						}
					}
				}
				p.approx = approx
			case op < 76: // kill
				ix.Kill(s)
				delete(m.pods, s)
				if rng.IntN(2) == 0 {
					ix.WaitSweeps()
				}
			case op < 78:
				register(rng.IntN(2) == 0)
			default: // query
				ix.Match(path, &r)
				var all HostBitmap
				for _, q := range pods {
					all = all.Set(q)
				}
				ix.SplitLearned(path, &r, all)
				for _, q := range pods {
					d, e, approx := m.depths(q, path)
					if got := r.Depth(q); got != d {
						t.Fatalf("seed %d step %d: pod %d: Depth = %d, want %d", seed, step, q, got, d)
					}
					if got := r.ExactDepth(q); got != e {
						t.Fatalf("seed %d step %d: pod %d: ExactDepth = %d, want %d (depth %d)", seed, step, q, got, e, d)
					}
					if got := r.Approximate().Has(q); got != approx {
						t.Fatalf("seed %d step %d: pod %d: Approximate = %v, want %v", seed, step, q, got, approx)
					}
					want := m.stored(q, path)
					if got := ix.StoredDepth(path, &r, q); got != want {
						t.Fatalf("seed %d step %d: pod %d: StoredDepth = %d, want %d (depth %d, approximate %v)", seed, step, q, got, want, d, approx)
					}
					if approx && want > 0 && want < d {
						total.StoredBelowDepth++
					}
				}
			}
		}
		ix.WaitSweeps()
		// The whole content: every block's holders, and the learned counts.
		want := map[BlockHash]HostBitmap{}
		var spec, approx int64
		for s, p := range m.pods {
			for h := range p.exact {
				want[h] = want[h].Set(s)
			}
			for h, e := range p.learned {
				want[h] = want[h].Set(s)
				if e.kind == kindApprox {
					approx++
				} else {
					spec++
				}
			}
			gs, ga := l.Learned(s)
			var ws, wa int
			for _, e := range p.learned {
				if e.kind == kindApprox {
					wa++
				} else {
					ws++
				}
			}
			if gs != ws || ga != wa {
				t.Fatalf("seed %d: pod %d: Learned = %d speculative, %d approximate; want %d, %d", seed, s, gs, ga, ws, wa)
			}
		}
		got := ix.Dump()
		if len(got) != len(want) {
			t.Fatalf("seed %d: Dump has %d blocks, reference %d", seed, len(got), len(want))
		}
		for _, e := range got {
			if want[e.Hash] != e.Holders {
				t.Fatalf("seed %d: block %x held by %v, want %v", seed, e.Hash, e.Holders, want[e.Hash])
			}
		}
		total.add(l.Stats())
		if st := l.Stats(); st.SpeculativeBlocks != spec || st.ApproximateBlocks != approx {
			t.Fatalf("seed %d: Stats %d speculative, %d approximate; want %d, %d", seed, st.SpeculativeBlocks, st.ApproximateBlocks, spec, approx)
		}
	}
}

// learnTotals sums learner counters over runs.
// StoredBelowDepth counts the queries where an approximate pod's stored
// depth was short of its depth and not 0 (speculative blocks under
// approximate ones).
type learnTotals struct {
	Speculated, Learned, Confirmed, Expired, Evicted, Cut, Dropped uint64
	StoredBelowDepth                                               uint64
}

func (t *learnTotals) add(s LearnStats) {
	t.Speculated += s.Speculated
	t.Learned += s.Learned
	t.Confirmed += s.Confirmed
	t.Expired += s.Expired
	t.Evicted += s.Evicted
	t.Cut += s.Cut
	t.Dropped += s.Dropped
}
