package flowcontrol

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// model is the naive reference of Queue: one list of every waiting item
// in arrival order, counters in a map, everything found by scanning.
type model struct {
	items    []*modelItem
	passes   map[uint64]int // by seq
	counters map[modelKey]float64
	weights  map[modelKey]float64
	floor    [auth.NumPriorities]float64
	seq      uint64
	// holds is, by pod, the order in which items were listed under it
	// (Queue.Hold): seqs, the first listing first.
	holds map[string][]uint64
}

type modelKey struct {
	band   auth.Priority
	tenant string
}

type modelItem struct {
	seq    uint64
	tenant string
	band   auth.Priority
	weight float64
	cost   float64
}

func newModel() *model {
	return &model{counters: map[modelKey]float64{}, weights: map[modelKey]float64{}, passes: map[uint64]int{}, holds: map[string][]uint64{}}
}

func (m *model) key(it *modelItem) modelKey { return modelKey{it.band, it.tenant} }

func (m *model) ensure(k modelKey, weight float64) {
	if _, ok := m.counters[k]; !ok {
		m.counters[k] = m.floor[k.band.Index()]
	}
	if weight > 0 {
		m.weights[k] = weight
	} else if m.weights[k] == 0 {
		m.weights[k] = 1
	}
}

func (m *model) waiting(k modelKey) int {
	n := 0
	for _, it := range m.items {
		if m.key(it) == k {
			n++
		}
	}
	return n
}

func (m *model) push(it *modelItem) {
	k := m.key(it)
	m.ensure(k, it.weight)
	if m.waiting(k) == 0 {
		lift, any := 0.0, false
		for _, o := range m.items {
			if o.band == it.band {
				if c := m.counters[m.key(o)]; !any || c < lift {
					lift, any = c, true
				}
			}
		}
		if !any {
			lift = m.floor[it.band.Index()]
		}
		m.counters[k] = math.Max(m.counters[k], lift)
	}
	m.seq++
	it.seq = m.seq
	m.items = append(m.items, it)
}

// hold is Queue.Hold: seq, if waiting, listed under pod once.
func (m *model) hold(seq uint64, pod string) {
	if m.find(seq) == nil || slices.Contains(m.holds[pod], seq) {
		return
	}
	m.holds[pod] = append(m.holds[pod], seq)
}

func (m *model) find(seq uint64) *modelItem {
	for _, it := range m.items {
		if it.seq == seq {
			return it
		}
	}
	return nil
}

func (m *model) remove(seq uint64) bool {
	for i, it := range m.items {
		if it.seq == seq {
			m.items = slices.Delete(m.items, i, i+1)
			for pod, l := range m.holds {
				m.holds[pod] = slices.DeleteFunc(l, func(s uint64) bool { return s == seq })
			}
			return true
		}
	}
	return false
}

// heads returns the first waiting item of each tenant of band b.
func (m *model) heads(b auth.Priority) []*modelItem {
	seen := map[string]bool{}
	var out []*modelItem
	for _, it := range m.items {
		if it.band == b && !seen[it.tenant] {
			seen[it.tenant] = true
			out = append(out, it)
		}
	}
	return out
}

// fairHeads returns the heads of band b's tenants, the least counter
// first (the earlier head on a tie).
func (m *model) fairHeads(b auth.Priority) []*modelItem {
	hs := m.heads(b)
	slices.SortFunc(hs, func(a, b *modelItem) int {
		ca, cb := m.counters[m.key(a)], m.counters[m.key(b)]
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
		return int(a.seq) - int(b.seq)
	})
	return hs
}

func (m *model) next(eligible func(*modelItem) bool) *modelItem {
	bands := auth.Priorities()
	for bi := len(bands) - 1; bi >= 0; bi-- {
		hs := m.fairHeads(bands[bi])
		for _, h := range hs {
			if eligible(h) {
				m.remove(h.seq)
				k := m.key(h)
				m.counters[k] += h.cost / m.weights[k]
				m.floor[bi] = m.counters[k]
				return h
			}
		}
	}
	return nil
}

// nextBest is Queue.NextBest for scores that are never negative: the
// tenant order of next, and within the tenant served, of its first
// lookahead items the eligible one with the least score, the earliest on
// a tie; the eligible items before it in the tenant's order are passed.
// With room, when that least score is above 0 (or none is eligible) and
// the tenant has items beyond the look, each pod with room offers the
// first eligible of its next lookahead holders beyond the look (in the
// order they were listed), and the least of those (the earliest on a tie)
// is taken when it scores less than the look's best; every eligible item
// of the look is then passed. With room, when nothing in the look (nor
// any holder) is eligible, the first of the next lookahead items that
// scores 0 is taken (the scores here are whole numbers: Lossless admits
// only 0).
func (m *model) nextBest(lookahead int, score func(*modelItem) (float64, bool), room map[string]bool) *modelItem {
	bands := auth.Priorities()
	look := max(lookahead, 1)
	for bi := len(bands) - 1; bi >= 0; bi-- {
		hs := m.fairHeads(bands[bi])
		for _, h := range hs {
			var all []*modelItem
			for _, it := range m.items {
				if it.band == h.band && it.tenant == h.tenant {
					all = append(all, it)
				}
			}
			window := all[:min(look, len(all))]
			var pick *modelItem
			least := math.Inf(1)
			for _, it := range window {
				if s, ok := score(it); ok && s < least {
					pick, least = it, s
				}
			}
			if room != nil && len(all) > len(window) && (pick == nil || least > 0) {
				last := window[len(window)-1].seq
				var held *modelItem
				heldLeast := math.Inf(1)
				for pod, ok := range room {
					if !ok {
						continue
					}
					k := 0
					for _, seq := range m.holds[pod] {
						it := m.find(seq)
						if it.band != h.band || it.tenant != h.tenant || it.seq <= last || k >= look {
							continue
						}
						k++
						s, ok := score(it)
						if !ok {
							continue
						}
						if s < heldLeast || (s == heldLeast && it.seq < held.seq) {
							held, heldLeast = it, s
						}
						break
					}
				}
				if held != nil && (pick == nil || heldLeast < least) {
					for _, it := range window {
						if _, ok := score(it); ok {
							m.passes[it.seq]++
						}
					}
					return m.take(held, bi)
				}
			}
			if pick == nil && room != nil && len(all) > len(window) {
				// Nothing in the look may go: the next look items that
				// lose nothing (score at most Lossless) may.
				var lossless []*modelItem
				for _, it := range all[len(window):min(len(all), len(window)+look)] {
					if s, ok := score(it); ok && s <= Lossless {
						lossless = append(lossless, it)
						if pick == nil || s < least {
							pick, least = it, s
						}
						if s <= 0 {
							break
						}
					}
				}
				if pick != nil {
					for _, it := range lossless {
						if it == pick {
							break
						}
						m.passes[it.seq]++
					}
					return m.take(pick, bi)
				}
			}
			if pick == nil {
				continue
			}
			for _, it := range window {
				if it == pick {
					break
				}
				if _, ok := score(it); ok {
					m.passes[it.seq]++
				}
			}
			return m.take(pick, bi)
		}
	}
	return nil
}

// take removes it, dispatched, and charges its tenant in band bi.
func (m *model) take(it *modelItem, bi int) *modelItem {
	m.remove(it.seq)
	k := m.key(it)
	m.counters[k] += it.cost / m.weights[k]
	m.floor[bi] = m.counters[k]
	return it
}

func (m *model) victim(incoming auth.Priority) *modelItem {
	for _, b := range auth.Priorities() {
		if b >= incoming {
			return nil
		}
		if w := m.newestOfLargest(b); w != nil {
			return w
		}
	}
	return nil
}

// newestOfLargest is the newest item of the tenant with the largest
// counter in band b (the newest such tail on a tie).
func (m *model) newestOfLargest(b auth.Priority) *modelItem {
	tails := map[string]*modelItem{}
	for _, it := range m.items {
		if it.band == b {
			tails[it.tenant] = it
		}
	}
	var worst *modelItem
	for _, t := range tails {
		if worst == nil || m.counters[m.key(t)] > m.counters[m.key(worst)] ||
			(m.counters[m.key(t)] == m.counters[m.key(worst)] && t.seq > worst.seq) {
			worst = t
		}
	}
	return worst
}

// TestQueueAgainstModel drives Queue and the naive model with the same
// random arrivals (bands, tenants, weights, costs), cancellations,
// dispatches with random saturation, sheds and charges, and checks that
// they choose the same item every time, keep the same counters, and that
// every item leaves exactly once.
func TestQueueAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		q, m := NewQueue(), newModel()
		live := map[uint64]*Item{} // by seq
		left := map[uint64]bool{}
		tenants := []string{"a", "b", "c", "d", ""}
		weights := map[string]float64{"a": 1, "b": 2, "c": 0.5, "d": 3, "": 0}
		bands := auth.Priorities()
		pods := []string{"p0", "p1", "p2", "p3"}
		for step := 0; step < 3000; step++ {
			switch op := rng.IntN(10); {
			case op < 4: // arrival
				ten := tenants[rng.IntN(len(tenants))]
				b := bands[rng.IntN(len(bands))]
				cost := float64(1 + rng.IntN(500))
				it := &Item{Tenant: ten, Band: b, Weight: weights[ten], Cost: cost}
				q.Push(it)
				mi := &modelItem{tenant: ten, band: b, weight: weights[ten], cost: cost}
				m.push(mi)
				if it.Seq() != mi.seq {
					t.Fatalf("seed %d step %d: seq %d, model %d", seed, step, it.Seq(), mi.seq)
				}
				live[it.Seq()] = it
				// Some arrivals hold their prefix on a pod or two.
				for range rng.IntN(3) {
					pod := pods[rng.IntN(len(pods))]
					q.Hold(it, pod)
					m.hold(it.Seq(), pod)
				}
			case op < 5 && rng.IntN(3) == 0: // a waiting item is listed later (a follower whose leader started)
				if len(live) == 0 {
					continue
				}
				seqs := keys(live)
				s := seqs[rng.IntN(len(seqs))]
				pod := pods[rng.IntN(len(pods))]
				q.Hold(live[s], pod)
				m.hold(s, pod)
			case op < 5: // cancellation of a random item, or of one already gone
				if len(live) == 0 {
					continue
				}
				seqs := keys(live)
				s := seqs[rng.IntN(len(seqs))]
				if got, want := q.Remove(live[s]), m.remove(s); got != want || !got {
					t.Fatalf("seed %d step %d: Remove(%d) = %v, model %v", seed, step, s, got, want)
				}
				if q.Remove(live[s]) {
					t.Fatalf("seed %d step %d: item %d removed twice", seed, step, s)
				}
				delete(live, s)
				left[s] = true
			case op < 6: // dispatch for affinity: random scores, some ineligible
				salt, look := uint64(rng.IntN(1000)), rng.IntN(6)
				score := func(seq uint64) (float64, bool) {
					v := (seq*2654435761 + salt) % 7
					return float64(v % 4), v != 6
				}
				var room map[string]bool // nil: no look at the holders
				if rng.IntN(3) > 0 {
					room = map[string]bool{}
					for _, p := range pods {
						room[p] = rng.IntN(2) == 0
					}
				}
				var roomFn func(string) bool
				if room != nil {
					roomFn = func(p string) bool { return room[p] }
				}
				got := q.NextBest(look, func(it *Item) (float64, bool) { return score(it.Seq()) }, roomFn)
				want := m.nextBest(look, func(it *modelItem) (float64, bool) { return score(it.seq) }, room)
				switch {
				case got == nil && want == nil:
				case got == nil || want == nil || got.Seq() != want.seq:
					t.Fatalf("seed %d step %d: NextBest(%d) = %v, model %v", seed, step, look, seqOf(got), want)
				default:
					delete(live, got.Seq())
					left[got.Seq()] = true
				}
				for s, it := range live {
					if it.Passes() != m.passes[s] {
						t.Fatalf("seed %d step %d: item %d passed %d times, model %d", seed, step, s, it.Passes(), m.passes[s])
					}
				}
			case op < 8: // dispatch with some tenants' pods saturated
				sat := map[string]bool{}
				for _, ten := range tenants {
					sat[ten] = rng.IntN(4) == 0
				}
				got := q.Next(func(it *Item) bool { return !sat[it.Tenant] })
				want := m.next(func(it *modelItem) bool { return !sat[it.tenant] })
				switch {
				case got == nil && want == nil:
				case got == nil || want == nil || got.Seq() != want.seq:
					t.Fatalf("seed %d step %d: Next = %v, model %v", seed, step, seqOf(got), want)
				default:
					if left[got.Seq()] {
						t.Fatalf("seed %d step %d: item %d left twice", seed, step, got.Seq())
					}
					delete(live, got.Seq())
					left[got.Seq()] = true
				}
			case op < 9: // shed for an arrival of a random band
				b := bands[rng.IntN(len(bands))]
				got, want := q.Victim(b), m.victim(b)
				if (got == nil) != (want == nil) || (got != nil && got.Seq() != want.seq) {
					t.Fatalf("seed %d step %d: Victim(%v) = %v, model %v", seed, step, b, seqOf(got), want)
				}
				if got != nil {
					q.Remove(got)
					m.remove(got.Seq())
					delete(live, got.Seq())
					left[got.Seq()] = true
				}
			default: // a request's real usage corrects its tenant's counter
				ten, b := tenants[rng.IntN(len(tenants))], bands[rng.IntN(len(bands))]
				tok := float64(rng.IntN(400) - 200)
				q.Charge(ten, b, weights[ten], tok)
				k := modelKey{b, ten}
				m.ensure(k, weights[ten])
				m.counters[k] += tok / m.weights[k]
			}
			if q.Len() != len(m.items) || q.Len() != len(live) {
				t.Fatalf("seed %d step %d: Len %d, model %d, live %d", seed, step, q.Len(), len(m.items), len(live))
			}
			for _, b := range bands {
				n := 0
				for _, it := range m.items {
					if it.band >= b {
						n++
					}
				}
				if q.AtOrAbove(b) != n {
					t.Fatalf("seed %d step %d: AtOrAbove(%v) = %d, model %d", seed, step, b, q.AtOrAbove(b), n)
				}
			}
			for k, c := range m.counters {
				if got := q.Counter(k.tenant, k.band); math.Abs(got-c) > 1e-6 {
					t.Fatalf("seed %d step %d: counter %v = %v, model %v", seed, step, k, got, c)
				}
			}
		}
		// Drain: everything still waiting leaves, once each.
		for it := q.Next(nil); it != nil; it = q.Next(nil) {
			if left[it.Seq()] || live[it.Seq()] == nil {
				t.Fatalf("seed %d: drained item %d left before", seed, it.Seq())
			}
			delete(live, it.Seq())
			left[it.Seq()] = true
		}
		if len(live) != 0 || q.Len() != 0 {
			t.Fatalf("seed %d: %d items lost", seed, len(live))
		}
	}
}

func keys(m map[uint64]*Item) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func seqOf(it *Item) any {
	if it == nil {
		return nil
	}
	return it.Seq()
}
