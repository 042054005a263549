package hierarchy

import "slices"

// outcomes records, per request, what the pod it was routed to did with
// it, for the two figures a user feels: whether the request queued, and an
// estimate of its time to first token.
//
// A request queues when its pod was busy on arrival: its active blocks
// above BusyThreshold of its cache, the cells' busy filter's test (the
// filter is soft, so when every candidate is busy one of them still takes
// the request; nothing is refused). Its TTFT estimate is the prefill of
// the blocks its pod did not hold, PrefillMsPerBlock each, shared with the
// requests already running on the pod (processor sharing: a pod running n
// requests prefills at 1/(n+1) of its speed). Both routers are measured
// with this one model.
type outcomes struct {
	msPerBlock float64
	busy       float64
	queued     int64
	// pending is the running-request count of the pod being admitted,
	// between observe and served.
	pending int
	ttft    []float64
}

func newOutcomes(cfg Config) outcomes {
	return outcomes{msPerBlock: cfg.PrefillMsPerBlock, busy: cfg.BusyThreshold}
}

// observe notes the state of local pod i of cl before r is admitted there.
func (o *outcomes) observe(cl *cluster, i int, r *request) {
	c := &cl.cands[i]
	if c.TotalBlocks > 0 && float64(c.ActiveBlocks) > o.busy*float64(c.TotalBlocks) {
		o.queued++
	}
	o.pending = c.ActiveRequests
}

// served records the request's prefill, in blocks, on the observed pod.
func (o *outcomes) served(prefill int) {
	o.ttft = append(o.ttft, o.msPerBlock*float64(prefill)*float64(1+o.pending))
}

// ttftStats returns the mean and the nearest-rank p50 and p95 in ms.
func (o *outcomes) ttftStats() (mean, p50, p95 float64) {
	if len(o.ttft) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(o.ttft)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	at := func(q float64) float64 { return s[min(len(s)-1, max(0, int(q*float64(len(s))+0.999999)-1))] }
	return sum / float64(len(s)), at(0.50), at(0.95)
}
