package ingestbench

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/zmqsub"
)

// recorder is the Sink the Subscriber feeds: it applies each batch with the
// real Applier and, once a batch is applied (visible to index queries),
// records when, by pod and sequence number.
type recorder struct {
	a    *events.Applier
	base time.Time
	pods map[string]int // read-only once built
	// done[p][seq] is when batch seq of pod p was applied, in ns since
	// base; 0 means not yet. Only pod p's socket goroutine writes done[p];
	// readers load applied first.
	done    [][]int64
	applied atomic.Int64
}

var _ zmqsub.Sink = (*recorder)(nil)

// newRecorder returns a recorder for the batches of w's pods.
func newRecorder(a *events.Applier, w *Workload, base time.Time) *recorder {
	r := &recorder{a: a, base: base, pods: make(map[string]int, len(w.Pods)), done: make([][]int64, len(w.Pods))}
	for p, ps := range w.Pods {
		r.pods[ps.ID] = p
		r.done[p] = make([]int64, len(ps.Payloads))
	}
	return r
}

// ApplyBatch applies b and records when a workload batch was applied.
func (r *recorder) ApplyBatch(ctx context.Context, b *events.Batch) error {
	err := r.a.ApplyBatch(ctx, b)
	if err != nil {
		return err
	}
	if p, ok := r.pods[b.Pod]; ok && b.Seq < uint64(len(r.done[p])) && r.done[p][b.Seq] == 0 {
		r.done[p][b.Seq] = max(1, time.Since(r.base).Nanoseconds())
		r.applied.Add(1)
	}
	return nil
}

// GiveUp passes a given-up gap to the applier.
func (r *recorder) GiveUp(holder string) bool { return r.a.GiveUp(holder) }

// ResetHolder passes a reset to the applier.
func (r *recorder) ResetHolder(pod string, rank int) bool { return r.a.ResetHolder(pod, rank) }

// Counters returns the applier's counters, which the Subscriber adds its
// replay requests to.
func (r *recorder) Counters() *events.Counters { return r.a.Counters() }
