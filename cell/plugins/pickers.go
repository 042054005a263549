package plugins

import (
	"math"
	"sort"
	"sync/atomic"

	"github.com/zeebo/xxh3"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// Fallbacks is how many candidates a picker ranks: the pick and the pods a
// request is retried on before its first byte. Ranking only these keeps a
// decision over 256 pods linear instead of a full sort.
const Fallbacks = 8

// byScore returns the positions of the best Fallbacks scores, best first.
// Ties are broken by a random key drawn from the decision's source, so
// equal pods share load instead of the first one taking everything.
func byScore(rc *pipeline.Context, scores []float64, order []int) []int {
	type entry struct {
		k int
		s float64
	}
	var seed uint64
	if rc.Rand != nil {
		seed = rc.Rand.Uint64()
	}
	// tie is a candidate's random tie-break key: one random draw per
	// decision mixed with the position, computed only for equal scores.
	tie := func(k int) uint64 { return uint64(blockhash.Mix(blockhash.Hash(seed), uint64(k))) }
	better := func(a, b entry) bool {
		if a.s != b.s {
			return a.s > b.s
		}
		return tie(a.k) > tie(b.k)
	}
	var top [Fallbacks]entry
	n := 0
	for k, sc := range scores {
		if n == Fallbacks && sc < top[n-1].s {
			continue // the common case, decided without the tie key
		}
		e := entry{k, sc}
		if n == Fallbacks && !better(e, top[n-1]) {
			continue
		}
		if n < Fallbacks {
			n++
		}
		i := n - 1
		for i > 0 && (sc > top[i-1].s || sc == top[i-1].s && better(e, top[i-1])) {
			top[i] = top[i-1]
			i--
		}
		top[i] = e
	}
	order = order[:0]
	for _, e := range top[:n] {
		order = append(order, e.k)
	}
	return order
}

// MaxScore picks the highest score; the rest follow by score.
type MaxScore struct{}

var _ pipeline.Picker = MaxScore{}

func (MaxScore) Type() string               { return "max-score" }
func (MaxScore) Reads() []pipeline.SlotRef  { return noSlots }
func (MaxScore) Writes() []pipeline.SlotRef { return noSlots }

// Pick implements pipeline.Picker.
func (MaxScore) Pick(rc *pipeline.Context, scores []float64, order []int) []int {
	return byScore(rc, scores, order)
}

// Softmax samples a pod with probability proportional to
// exp(normalised score / Temperature), the reference router's sampling over
// normalised costs; Temperature 0 is the arg-max. The sampled pod goes
// first and the rest follow by score.
type Softmax struct {
	Temperature float64 `yaml:"temperature"`
}

var _ pipeline.Picker = (*Softmax)(nil)

func (*Softmax) Type() string               { return "softmax" }
func (*Softmax) Reads() []pipeline.SlotRef  { return noSlots }
func (*Softmax) Writes() []pipeline.SlotRef { return noSlots }

// Pick implements pipeline.Picker. It allocates the probabilities per call
// (pickers are shared across concurrent decisions).
func (s *Softmax) Pick(rc *pipeline.Context, scores []float64, order []int) []int {
	order = byScore(rc, scores, order)
	t := s.Temperature
	if o := rc.Req.Overrides.Temperature; o != nil {
		t = *o
	}
	if t <= 0 || len(order) < 2 || rc.Rand == nil {
		return order
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range scores {
		lo, hi = min(lo, x), max(hi, x)
	}
	if hi == lo {
		return order // all equal: the shuffled order already spreads them
	}
	probs := make([]float64, len(scores))
	sum := 0.0
	for k, x := range scores {
		probs[k] = math.Exp(((x-lo)/(hi-lo) - 1) / t)
		sum += probs[k]
	}
	u := rc.Rand.Float64() * sum
	chosen := len(scores) - 1
	for k, p := range probs {
		if u < p {
			chosen = k
			break
		}
		u -= p
	}
	return moveFront(order, chosen)
}

// moveFront puts position k first in order (adding it if absent), keeping
// at most Fallbacks entries.
func moveFront(order []int, k int) []int {
	i := 0
	for i < len(order) && order[i] != k {
		i++
	}
	if i == len(order) {
		if len(order) < Fallbacks {
			order = append(order, 0)
		} else {
			i = len(order) - 1
		}
	}
	copy(order[1:i+1], order[:i])
	order[0] = k
	return order
}

// RoundRobinPick rotates over the active pods, ignoring scores.
type RoundRobinPick struct{ next atomic.Uint64 }

var _ pipeline.Picker = (*RoundRobinPick)(nil)

func (*RoundRobinPick) Type() string               { return "round-robin-pick" }
func (*RoundRobinPick) Reads() []pipeline.SlotRef  { return noSlots }
func (*RoundRobinPick) Writes() []pipeline.SlotRef { return noSlots }

// Pick implements pipeline.Picker.
func (p *RoundRobinPick) Pick(_ *pipeline.Context, scores []float64, order []int) []int {
	n := len(scores)
	order = order[:0]
	if n == 0 {
		return order
	}
	start := int(p.next.Add(1)-1) % n
	for k := 0; k < min(n, Fallbacks); k++ {
		order = append(order, (start+k)%n)
	}
	return order
}

// Sticky sends a session to the pod that served it last while that pod is
// active, else picks by score.
type Sticky struct{ s *Sessions }

var _ pipeline.Picker = (*Sticky)(nil)

func (*Sticky) Type() string               { return "sticky-session" }
func (*Sticky) Reads() []pipeline.SlotRef  { return pipeline.Refs(pipeline.SessionKey.Ref()) }
func (*Sticky) Writes() []pipeline.SlotRef { return noSlots }

// Pick implements pipeline.Picker.
func (p *Sticky) Pick(rc *pipeline.Context, scores []float64, order []int) []int {
	order = byScore(rc, scores, order)
	key, _ := pipeline.SessionKey.Get(rc)
	if key == "" || p.s == nil {
		return order
	}
	pod, ok := p.s.Pod(key)
	if !ok {
		return order
	}
	for k, i := range rc.Active() {
		if rc.Candidates[i].Pod == pod {
			return moveFront(order, k)
		}
	}
	return order
}

// ConsistentHash sends requests with the same hash key (the same leading
// blocks) to the same pod by rendezvous hashing, skipping pods whose load
// exceeds (1+Epsilon) times the mean (consistent hashing with bounded
// loads), so a hot prefix cannot melt one pod.
type ConsistentHash struct {
	Epsilon float64 `yaml:"epsilon"`
}

var _ pipeline.Picker = (*ConsistentHash)(nil)

func (*ConsistentHash) Type() string               { return "consistent-hash" }
func (*ConsistentHash) Reads() []pipeline.SlotRef  { return pipeline.Refs(pipeline.HashKey.Ref()) }
func (*ConsistentHash) Writes() []pipeline.SlotRef { return noSlots }

// Pick implements pipeline.Picker.
func (p *ConsistentHash) Pick(rc *pipeline.Context, scores []float64, order []int) []int {
	key, _ := pipeline.HashKey.Get(rc)
	act := rc.Active()
	total := 0
	for _, i := range act {
		total += rc.Candidates[i].ActiveRequests
	}
	bound := (1 + p.Epsilon) * float64(total+1) / float64(len(act))
	weights := make([]uint64, len(act))
	order = order[:0]
	for k, i := range act {
		weights[k] = uint64(blockhash.Mix(blockhash.Hash(key), xxh3.HashString(rc.Candidates[i].Pod)))
		order = append(order, k)
	}
	sort.Slice(order, func(a, b int) bool { return weights[order[a]] > weights[order[b]] })
	// Move pods over the bound behind the others, keeping hash order.
	under := order[:0:0]
	var over []int
	for _, k := range order {
		if float64(rc.Candidates[act[k]].ActiveRequests+1) > bound {
			over = append(over, k)
		} else {
			under = append(under, k)
		}
	}
	order = append(append(order[:0], under...), over...)
	return order[:min(len(order), Fallbacks)]
}
