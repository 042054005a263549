package plugins

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// Healthy keeps pods the registry considers alive and that are not being
// drained. It is a hard filter: a dead pod is never a fall-back.
type Healthy struct{}

var _ pipeline.Filter = Healthy{}

func (Healthy) Type() string               { return "healthy" }
func (Healthy) Reads() []pipeline.SlotRef  { return noSlots }
func (Healthy) Writes() []pipeline.SlotRef { return noSlots }
func (Healthy) Hard() bool                 { return true }

// Keep implements pipeline.Filter.
func (Healthy) Keep(rc *pipeline.Context, i int) (bool, string) {
	c := &rc.Candidates[i]
	switch {
	case !c.Healthy:
		return false, "not healthy"
	case c.Draining:
		return false, "draining"
	}
	return true, ""
}

// RoleFilter keeps pods that serve the phase being picked for (prefill,
// decode, or both for an aggregated request). Hard.
type RoleFilter struct{}

var _ pipeline.Filter = RoleFilter{}

func (RoleFilter) Type() string               { return "role" }
func (RoleFilter) Reads() []pipeline.SlotRef  { return noSlots }
func (RoleFilter) Writes() []pipeline.SlotRef { return noSlots }
func (RoleFilter) Hard() bool                 { return true }

// Keep implements pipeline.Filter.
func (RoleFilter) Keep(rc *pipeline.Context, i int) (bool, string) {
	if r := rc.Candidates[i].Role; !r.Serves(rc.Phase) {
		return false, fmt.Sprintf("serves %s, not %s", r, rc.Phase)
	}
	return true, ""
}

// Concurrency keeps pods with fewer than MaxRequests requests in flight.
// Soft: when every pod is at its cap the decision fails open.
type Concurrency struct {
	MaxRequests int `yaml:"max_requests"`
}

var _ pipeline.Filter = (*Concurrency)(nil)

func (*Concurrency) Type() string               { return "concurrency" }
func (*Concurrency) Reads() []pipeline.SlotRef  { return noSlots }
func (*Concurrency) Writes() []pipeline.SlotRef { return noSlots }
func (*Concurrency) Hard() bool                 { return false }

// Keep implements pipeline.Filter.
func (f *Concurrency) Keep(rc *pipeline.Context, i int) (bool, string) {
	if n := rc.Candidates[i].ActiveRequests; n >= f.MaxRequests {
		return false, fmt.Sprintf("%d requests in flight (cap %d)", n, f.MaxRequests)
	}
	return true, ""
}

// Busy skips pods whose active KV blocks exceed Threshold of their cache
// (the reference router's busy threshold). Pods of unknown size pass. Soft.
type Busy struct {
	Threshold float64 `yaml:"threshold"`
}

var _ pipeline.Filter = (*Busy)(nil)

func (*Busy) Type() string               { return "busy" }
func (*Busy) Reads() []pipeline.SlotRef  { return noSlots }
func (*Busy) Writes() []pipeline.SlotRef { return noSlots }
func (*Busy) Hard() bool                 { return false }

// Keep implements pipeline.Filter.
func (f *Busy) Keep(rc *pipeline.Context, i int) (bool, string) {
	c := &rc.Candidates[i]
	if c.TotalBlocks <= 0 {
		return true, ""
	}
	if !f.busy(c) {
		return true, ""
	}
	u := float64(c.ActiveBlocks) / float64(c.TotalBlocks)
	return false, fmt.Sprintf("%.0f%% of KV blocks active (threshold %.0f%%)", 100*u, 100*f.Threshold)
}

// busy is the one comparison Keep and KeepAll share: active blocks above
// Threshold of the total, in integers with the threshold in parts per
// million.
func (f *Busy) busy(c *pipeline.Candidate) bool { return busyAt(c, f.ppm()) }

// ppm is the threshold in parts per million.
func (f *Busy) ppm() int64 { return int64(f.Threshold * 1e6) }

func busyAt(c *pipeline.Candidate, ppm int64) bool {
	return c.TotalBlocks > 0 && int64(c.ActiveBlocks)*1e6 > ppm*int64(c.TotalBlocks)
}

// The KeepAll loops below are the filters' hot path: 256 candidates per
// filter per decision. Each reads the candidate list once into a local (a
// call to rc.Reject could otherwise make the compiler reload it every
// iteration), writes every index into out and advances only over the kept
// ones, and leaves the rare rejection to an out-of-line call to Keep for its
// reason. BenchmarkKeepAll measures them.

// grow returns out with room for n more indices.
func grow(out []int, n int) []int {
	if cap(out)-len(out) < n {
		out = append(make([]int, 0, len(out)+n), out...)
	}
	return out
}

// reject records the reason f's Keep gives for candidate i.
func reject(rc *pipeline.Context, f pipeline.Filter, i int) {
	_, why := f.Keep(rc, i)
	rc.Reject(i, f.Type(), why)
}

// KeepAll implements pipeline.BatchFilter.
func (f Healthy) KeepAll(rc *pipeline.Context, in, out []int) []int {
	cands, out := rc.Candidates, grow(out, len(in))
	n, o := len(out), out[:cap(out)]
	for _, i := range in {
		c := &cands[i]
		o[n] = i
		if c.Healthy && !c.Draining {
			n++
		} else {
			reject(rc, f, i)
		}
	}
	return o[:n]
}

// KeepAll implements pipeline.BatchFilter.
func (f RoleFilter) KeepAll(rc *pipeline.Context, in, out []int) []int {
	cands, out, phase := rc.Candidates, grow(out, len(in)), rc.Phase
	n, o := len(out), out[:cap(out)]
	for _, i := range in {
		o[n] = i
		if cands[i].Role.Serves(phase) {
			n++
		} else {
			reject(rc, f, i)
		}
	}
	return o[:n]
}

// KeepAll implements pipeline.BatchFilter.
func (f *Concurrency) KeepAll(rc *pipeline.Context, in, out []int) []int {
	cands, out, limit := rc.Candidates, grow(out, len(in)), f.MaxRequests
	n, o := len(out), out[:cap(out)]
	for _, i := range in {
		o[n] = i
		if cands[i].ActiveRequests < limit {
			n++
		} else {
			reject(rc, f, i)
		}
	}
	return o[:n]
}

// KeepAll implements pipeline.BatchFilter. It compares in integers, the
// threshold in parts per million, without dividing.
func (f *Busy) KeepAll(rc *pipeline.Context, in, out []int) []int {
	cands, out, ppm := rc.Candidates, grow(out, len(in)), f.ppm()
	n, o := len(out), out[:cap(out)]
	for _, i := range in {
		o[n] = i
		if !busyAt(&cands[i], ppm) {
			n++
		} else {
			reject(rc, f, i)
		}
	}
	return o[:n]
}

var (
	_ pipeline.BatchFilter = Healthy{}
	_ pipeline.BatchFilter = RoleFilter{}
	_ pipeline.BatchFilter = (*Concurrency)(nil)
	_ pipeline.BatchFilter = (*Busy)(nil)
)
