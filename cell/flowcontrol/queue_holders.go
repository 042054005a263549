package flowcontrol

// Holders: a pod's waiting requests, from anywhere in the queue.
//
// NextBest looks at the first lookahead items of a tenant's queue. Past
// capacity the queue holds hundreds of requests, and a follow-up whose
// prefix a pod holds joins at the back: by the time it reaches the first
// lookahead, that pod has served the queue in front of it and evicted
// the prefix (the conversation trace at twice the compare fleet's
// capacity: 480 waiting, 8 pods of 131k tokens each). So a queued item
// may also be listed under the pods that hold its prefix (Queue.Hold),
// and a pod with room takes the oldest of its holders from anywhere in
// the tenant's queue when nothing in the first lookahead scores at or
// below 0 (NextBest). Cached prefixes are also the shortest prefills:
// taking them first is shortest-job-first, which lowers the mean wait.

// holderNode is an item's place in one pod's list of holders.
type holderNode struct {
	it         *Item
	pod        string
	prev, next *holderNode
}

// holderList is one pod's holders within a tenant's queue, in the order
// Hold listed them.
type holderList struct{ head, tail *holderNode }

// Hold lists it, which must be queued, among the items whose prefix pod
// holds: a freed pod may then take it from anywhere in its tenant's
// queue (NextBest). Listing an item twice under one pod does nothing.
func (q *Queue) Hold(it *Item, pod string) {
	if !it.queued {
		return
	}
	for _, n := range it.holds {
		if n.pod == pod {
			return
		}
	}
	tq := it.tq
	if tq.holders == nil {
		tq.holders = map[string]*holderList{}
	}
	l := tq.holders[pod]
	if l == nil {
		l = &holderList{}
		tq.holders[pod] = l
	}
	n := &holderNode{it: it, pod: pod, prev: l.tail}
	if l.tail != nil {
		l.tail.next = n
	} else {
		l.head = n
	}
	l.tail = n
	it.holds = append(it.holds, n)
}

// unhold takes it, which leaves the queue, out of its pods' lists.
func (tq *tenantQueue) unhold(it *Item) {
	for _, n := range it.holds {
		l := tq.holders[n.pod]
		if n.prev != nil {
			n.prev.next = n.next
		} else {
			l.head = n.next
		}
		if n.next != nil {
			n.next.prev = n.prev
		} else {
			l.tail = n.prev
		}
		if l.head == nil {
			delete(tq.holders, n.pod)
		}
		n.prev, n.next, n.it = nil, nil, nil
	}
	it.holds = nil
}

// heldBest returns, of the holders listed under each pod with room, the
// first eligible one among the first look of them after the item numbered
// after (the window NextBest already scored), the one with the least
// score (the earliest on a tie), and its score; nil when none is.
func (tq *tenantQueue) heldBest(look int, after uint64, score func(*Item) (float64, bool), room func(string) bool) (best *Item, least float64) {
	for pod, l := range tq.holders {
		if !room(pod) {
			continue
		}
		k := 0
		for n := l.head; n != nil && k < look; n = n.next {
			if n.it.seq <= after {
				continue
			}
			k++
			s, ok := score(n.it)
			if !ok {
				continue
			}
			if best == nil || s < least || (s == least && n.it.seq < best.seq) {
				best, least = n.it, s
			}
			break
		}
	}
	return best, least
}
