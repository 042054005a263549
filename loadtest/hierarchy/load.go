package hierarchy

import "container/heap"

// The load model, the same for both routers: a request occupies the pod it
// was routed to from its arrival until arrival + output_length *
// DecodeMsPerToken of trace time. While it runs it counts as one active
// request and as its prompt blocks plus its output blocks (output tokens /
// block size, rounded up) of active blocks: the pipeline's ActiveRequests
// and ActiveBlocks, which the busy filter and the kv-cost scorer read (and
// which a probe reports as the pick's load). Nothing else about time is
// modelled: prefill is instantaneous and a pod's cache is updated when the
// request arrives.

// release is the end of one request's occupancy.
type release struct {
	end    int64
	cl     *cluster
	local  int
	blocks int
}

// loadModel holds the running requests of one router, earliest end first.
type loadModel []release

func (q loadModel) Len() int { return len(q) }
func (q loadModel) Less(i, j int) bool {
	return q[i].end < q[j].end
}
func (q loadModel) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *loadModel) Push(x any)   { *q = append(*q, x.(release)) }
func (q *loadModel) Pop() any {
	old := *q
	r := old[len(old)-1]
	*q = old[:len(old)-1]
	return r
}

// start puts a request on local pod i of cl until end.
func (q *loadModel) start(cl *cluster, i, blocks int, end int64) {
	cl.addLoad(i, 1, blocks)
	heap.Push(q, release{end: end, cl: cl, local: i, blocks: blocks})
}

// advance ends every request whose end is at or before now.
func (q *loadModel) advance(now int64) {
	for q.Len() > 0 && (*q)[0].end <= now {
		r := heap.Pop(q).(release)
		r.cl.addLoad(r.local, -1, -r.blocks)
	}
}
