package global

import "time"

// ProbeAnswer is one cell's answer to a probe.
type ProbeAnswer struct {
	// Cell indexes the views.
	Cell int
	// Err is set when the probe failed (timeout, unreachable cell).
	Err error
	// Pod is the pod the cell would pick; Matched its prefix depth in
	// blocks; Load its active blocks; Cost the cell's own cost for it.
	Pod     string
	Matched int
	Load    float64
	Cost    float64
	// Busy says the pick is busy (its active blocks above the cell's busy
	// threshold): the cell's soft busy filter let it through only because
	// every pod of the cell was busy. Its load is in Load either way;
	// Choose uses Busy to break ties between equal costs or, with
	// ChooseConfig.AvoidBusy, to put the pick after every pick that is not
	// busy.
	Busy bool
	// CellBlocks is the cell's active blocks as the global tier knows them
	// (gossiped, plus its own hand-offs since): among picks of equal cost,
	// the less loaded cell's comes first.
	CellBlocks int
	// RTT is the probe's round-trip time; Opened says the probe had to
	// open its connection first, so RTT includes the handshake.
	RTT    time.Duration
	Opened bool
	// Distance is what the choice charges for the hop to the cell: the
	// cell's network distance (see distances), not this probe's RTT.
	Distance time.Duration
	// WaitCost is what the choice charges for the wait the cell announced
	// for the request's priority band (see chargeWaits), in blocks.
	WaitCost float64
	// Evicts is how many cached blocks the pick would evict to store the
	// request's blocks it lacks: what does not fit in the pod's free cache
	// (the cell's Candidate.Evicts, carried as the probe answer's
	// evict_blocks). 0 from a cell that does not report it.
	Evicts float64
}

// ChooseConfig weighs the parts of a cell's cost.
type ChooseConfig struct {
	// PrefillWeight is the cost of one block to prefill, against one
	// active block of load on the chosen pod (the cell's own cost model).
	PrefillWeight float64
	// MoveWeight is what the fleet pays, per block, for a copy of a prefix
	// another cell already holds, on top of prefilling it: the copy takes
	// cache the new cell's other prefixes are evicted from, while the old
	// copy lingers unused, and the conversation's next turn finds its
	// prefix in only one of them. A cell whose pick matches fewer blocks
	// than the deepest answer pays it for each block it lacks, so a
	// follow-up leaves the cell holding its prefix only when the load it
	// escapes outweighs both the prefill and the copy. 0 weighs the
	// prefill alone, as the cells do.
	MoveWeight float64
	// RTTWeight is the cost of one millisecond of round-trip time, in
	// blocks: across regions a farther cell must save that much prefill.
	RTTWeight float64
	// PressureWeight is the cost of one cached block the pick would evict
	// (ProbeAnswer.Evicts): the reuse it would have given the requests that
	// come back to it. It should be the cells' kv-cost pressure_weight, so
	// that the global tier weighs a full pod as the cells do.
	PressureWeight float64
	// AvoidBusy puts a busy pick (ProbeAnswer.Busy) after every pick that
	// is not, whatever their costs, as the flat router's soft busy filter
	// passes over busy pods while any other is left. Off, the cost decides
	// (a busy pick's load is in it) and busy picks only come after others
	// of equal cost: across cells the override grows with the probes (one
	// more probe, one more chance of a cell with room), and it moved
	// follow-ups off their prefix for any load gap, however small; see
	// doc.go, "Busy cells".
	AvoidBusy bool
}

// DefaultChooseConfig follows the cells' default cost, with a move
// costing as much again as the prefill it makes.
func DefaultChooseConfig() ChooseConfig {
	return ChooseConfig{PrefillWeight: 1, MoveWeight: DefaultMoveWeight, RTTWeight: 1, PressureWeight: DefaultPressureWeight}
}

// DefaultPressureWeight is ChooseConfig.PressureWeight's default, the
// cells' default kv-cost pressure_weight (plugins.DefaultPressureWeight;
// global may not import cell, so a test checks they agree).
const DefaultPressureWeight = 1

// DefaultMoveWeight is ChooseConfig.MoveWeight's default.
const DefaultMoveWeight = 1

// BlockWeight is the weight of one block a cell lacks against the deepest
// answer in the choice's order: the prefill and the move. (The cost Choose
// documents differs from BlockWeight*(total-matched) + load by the same
// amount for every answer of one request, so both order cells alike; the
// search's bounds use BlockWeight.)
func (c ChooseConfig) BlockWeight() float64 { return c.PrefillWeight + c.MoveWeight }

// Choose orders the answered cells by cost, lowest first: for each,
// PrefillWeight*(total-matched) + MoveWeight*(deepest-matched) + load of
// its pick + RTTWeight*distance_ms + WaitCost (the cell's wait for the
// request's band) + PressureWeight*Evicts (the cached blocks the pick
// would evict), where deepest is the deepest match of any answer. Since
// deepest is one number for all answers, the order is that of
// BlockWeight*(total-matched) + load + RTTWeight*distance_ms + WaitCost +
// PressureWeight*Evicts, a cost of the cell alone: probing more cells never makes Choose prefer a
// cell it would rank lower among fewer answers.
// Among equal costs a pick that is not busy comes first (with AvoidBusy,
// a busy pick comes after every pick that is not, whatever the costs),
// then the less loaded cell (CellBlocks:
// the flat router breaks such ties at random over every pod, which spreads
// them; the search order would send them all to the cell of the deepest
// estimate); cells whose probe failed come last, in their search order. It
// is pure.
func Choose(cfg ChooseConfig, answers []ProbeAnswer, total int) []int {
	s := make([]scored, len(answers))
	for i, a := range answers {
		s[i] = scored{cell: a.Cell, ok: a.Err == nil, busy: a.Busy, blocks: a.CellBlocks}
		if a.Err == nil {
			prefill, load, dist := chooseTerms(&cfg, &a, total)
			s[i].cost = prefill + load + dist + a.WaitCost + cfg.PressureWeight*a.Evicts
		}
	}
	// Stable insertion sort: answers are few.
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].before(&s[j-1], cfg.AvoidBusy); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	out := make([]int, len(s))
	for i := range s {
		out[i] = s[i].cell
	}
	return out
}

// chooseTerms are the three terms of an answered cell's cost in Choose:
// BlockWeight*(total-matched) (prefill and move), the pick's load, and RTTWeight times the
// cell's distance in milliseconds.
func chooseTerms(cfg *ChooseConfig, a *ProbeAnswer, total int) (prefill, load, dist float64) {
	return cfg.BlockWeight() * float64(total-a.Matched), a.Load, cfg.RTTWeight * float64(a.Distance) / float64(time.Millisecond)
}

// scored is one answer as Choose orders it.
type scored struct {
	cell     int
	cost     float64
	ok, busy bool
	blocks   int
}

// before says a goes before b; avoidBusy is ChooseConfig.AvoidBusy.
func (a *scored) before(b *scored, avoidBusy bool) bool {
	switch {
	case a.ok != b.ok:
		return a.ok
	case !a.ok:
		return false
	case avoidBusy && a.busy != b.busy:
		return !a.busy
	case a.cost != b.cost:
		return a.cost < b.cost
	case a.busy != b.busy:
		return !a.busy
	}
	return a.blocks < b.blocks
}
