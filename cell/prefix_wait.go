package cell

import "time"

// The outcomes of a prefix wait, for cellrouter_prefix_waits_total.
const (
	prefixWaitStored    = "stored"
	prefixWaitBound     = "bound"
	prefixWaitCancelled = "cancelled"
)

// holdForPrefix is the prefix wait (routing.prefix_wait, see
// PrefixWaitConfig): when pod is still prefilling a prompt that shares
// more of this request's prefix than pod holds, the request waits until
// that prefill ends, the client leaves, or PrefixWaitBound passes (the
// prefill of the blocks it would gain), whichever comes first. The call's
// ticket is on pod already, so decisions made meanwhile see the load.
func (k *call) holdForPrefix(pod string) {
	pw := k.c.cfg.Routing.PrefixWait
	if !pw.Enabled || k.stored >= k.blocks || (k.d.plan.Disaggregated && k.leg == "decode") {
		return
	}
	f, depth := k.c.router.prefills.Deepest(pod, k.hashes, k.stored)
	if f == nil {
		return
	}
	bound := PrefixWaitBound(depth-k.stored, k.c.cfg.Events.BlockSize, k.c.cfg.Routing.Cost.PrefillPerTokenUs, pw.MaxWait)
	if bound <= 0 {
		return
	}
	start := time.Now()
	t := time.NewTimer(bound)
	defer t.Stop()
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
