package cell

import (
	"time"

	"github.com/cellrouter/cellrouter/cell/load"
)

// The outcomes of a prefix wait, for cellrouter_prefix_waits_total.
const (
	prefixWaitStored    = "stored"
	prefixWaitBound     = "bound"
	prefixWaitCancelled = "cancelled"
)

// prefixToWait is the prefix wait's decision (routing.prefix_wait, see
// PrefixWaitConfig): when pod is still prefilling a prompt that will store
// more of this request's prefix than pod holds, and is expected to end
// before the request would have computed those blocks itself, it returns
// that prefill and how long to wait for it at most (PrefixWaitBound: the
// queue the request would wait for anyway plus the prefill of the blocks
// it gains); nil otherwise.
func (k *call) prefixToWait(pod string) (*load.Prefill, time.Duration) {
	pw := k.c.cfg.Routing.PrefixWait
	if !pw.Enabled || (k.d.plan.Disaggregated && k.leg == "decode") {
		return nil, 0
	}
	// What the pod has stored of the prompt (speculative blocks apart, for
	// a pod without events too: storedDepthOf).
	above := k.stored
	f, gain := k.c.router.prefills.Deepest(pod, k.hashes, above)
	if f == nil {
		return nil, 0
	}
	// What is left of f's prefill: its blocks beyond what the pod holds
	// now (a prefill that waited for another one began with that one's
	// blocks still to come), less the time since it was sent.
	cost, bs := k.c.cfg.Routing.Cost, k.c.cfg.Events.BlockSize
	work := f.Work() - max(0, above-f.From())
	remaining := PrefixRemaining(work, bs, cost.PrefillPerTokenUs, time.Since(f.Began()))
	bound := PrefixWaitBound(gain, bs, cost.PrefillPerTokenUs, k.queueAhead(pod), remaining, pw.MaxWait)
	if bound <= 0 {
		return nil, 0
	}
	return f, bound
}

// waitPrefix holds the request until f's prefill ends, the client (the
// gateway in picker mode) leaves or bound passes, whichever comes first; a
// nil f returns at once. The call's ticket is on its pod already, so
// decisions made meanwhile see the load.
func (k *call) waitPrefix(f *load.Prefill, bound time.Duration) {
	if f == nil {
		return
	}
	start := time.Now()
	t := time.NewTimer(bound)
	defer t.Stop()
	k.c.router.prefixWaiting.Add(1)
	defer k.c.router.prefixWaiting.Add(-1)
	outcome := prefixWaitStored
	select {
	case <-f.Done():
	case <-t.C:
		outcome = prefixWaitBound
	case <-k.ctx.Done():
		outcome = prefixWaitCancelled
	}
	k.c.rm.prefixWaits.WithLabelValues(outcome).Inc()
	k.c.rm.prefixWait.Observe(time.Since(start).Seconds())
}

// queueAhead is the queue wait the engine model (routing.cost) expects
// for a request that starts on pod now: the pod's load without this
// call's own ticket.
func (k *call) queueAhead(pod string) time.Duration {
	u := k.c.router.tracker.Usage(pod)
	requests, pending := u.Requests, u.PrefillBlocks
	if k.ticket != nil {
		requests--
		pending -= k.blocks - k.stored
	}
	cost := k.c.cfg.Routing.Cost.ttft(1)
	blockMs := cost.PrefillPerTokenUs * float64(k.c.cfg.Events.BlockSize) / 1000
	return time.Duration(cost.QueueWaitMs(requests, pending, blockMs) * float64(time.Millisecond))
}
