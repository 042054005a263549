package flowcontrol

import (
	"github.com/cellrouter/cellrouter/internal/auth"
)

// Item is one request in a Queue. The caller fills the exported fields
// before Push and must not change them while the item is queued.
type Item struct {
	// Tenant names the request's tenant ("" for none).
	Tenant string
	// Band is the request's priority band.
	Band auth.Priority
	// Weight is the tenant's fair-share weight (over 0; 0 counts as 1).
	Weight float64
	// Cost is the tokens the request is charged when it is dispatched:
	// its prompt and expected output.
	Cost float64
	// Value is the caller's own data (the controller's waiter).
	Value any

	seq    uint64 // arrival order, unique per queue
	passes int    // times NextBest took a later item of its tenant instead
	tq     *tenantQueue
	holds  []*holderNode // its places in its pods' holder lists (Hold)
	prev   *Item         // the tenant's FIFO, a doubly linked list
	next   *Item
	queued bool
}

// Seq returns the item's arrival number (unique, increasing).
func (it *Item) Seq() uint64 { return it.seq }

// Passes returns how many times NextBest dispatched a later item of its
// tenant while this one was eligible (see NextBest).
func (it *Item) Passes() int { return it.passes }

// Queued reports whether the item is in its queue.
func (it *Item) Queued() bool { return it.queued }

// tenantQueue is one tenant's waiting items of one band and its virtual
// token counter there.
type tenantQueue struct {
	name    string
	weight  float64
	counter float64 // virtual tokens: served tokens / weight, lifted on activation
	head    *Item
	tail    *Item
	n       int
	active  int // index in band.active, -1 when the tenant waits for nothing
	// holders lists, by pod, the waiting items whose prefix the pod holds
	// (Queue.Hold; queue_holders.go).
	holders map[string]*holderList
}

// band is one priority band: its tenants and the ones with items waiting.
type band struct {
	tenants map[string]*tenantQueue
	active  []*tenantQueue
	n       int
	// floor is the counter of the tenant served last: a tenant that turns
	// active while no other is is lifted to it.
	floor float64
}

// Queue is the decision core of flow control: strict priority between
// bands and, within a band, the tenant with the least virtual tokens
// served first (see the package comment). It holds no lock, clock or
// goroutine; the Controller drives it under its own lock.
type Queue struct {
	bands [auth.NumPriorities]band
	seq   uint64
	n     int
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	q := &Queue{}
	for i := range q.bands {
		q.bands[i].tenants = map[string]*tenantQueue{}
	}
	return q
}

// Len returns the number of items waiting.
func (q *Queue) Len() int { return q.n }

// BandLen returns the number of items of band b waiting.
func (q *Queue) BandLen(b auth.Priority) int { return q.bands[b.Index()].n }

// Waiting returns the number of items of tenant in band b waiting.
func (q *Queue) Waiting(tenant string, b auth.Priority) int {
	if tq := q.bands[b.Index()].tenants[tenant]; tq != nil {
		return tq.n
	}
	return 0
}

// headSeq returns the arrival number of the first item of tenant in band
// b waiting (0 when none waits).
func (q *Queue) headSeq(tenant string, b auth.Priority) uint64 {
	if tq := q.bands[b.Index()].tenants[tenant]; tq != nil && tq.head != nil {
		return tq.head.seq
	}
	return 0
}

// AtOrAbove returns the number of items waiting in band b or a higher one.
func (q *Queue) AtOrAbove(b auth.Priority) int {
	n := 0
	for i := b.Index(); i < auth.NumPriorities; i++ {
		n += q.bands[i].n
	}
	return n
}

// tenant returns the tenant's queue of band bi, made on first use.
func (q *Queue) tenant(bi int, name string, weight float64) *tenantQueue {
	b := &q.bands[bi]
	tq := b.tenants[name]
	if tq == nil {
		tq = &tenantQueue{name: name, active: -1, counter: b.floor}
		b.tenants[name] = tq
	}
	if weight > 0 {
		tq.weight = weight
	} else if tq.weight == 0 {
		tq.weight = 1
	}
	return tq
}

// Push appends it to its tenant's queue in its band. A tenant that had
// nothing waiting is lifted to the least counter of the band's waiting
// tenants (or the band's floor when none waits), so idling never banks
// credit that would let it starve the others later.
func (q *Queue) Push(it *Item) {
	bi := it.Band.Index()
	b := &q.bands[bi]
	tq := q.tenant(bi, it.Tenant, it.Weight)
	if tq.n == 0 {
		lift := b.floor
		for i, a := range b.active {
			if i == 0 || a.counter < lift {
				lift = a.counter
			}
		}
		tq.counter = max(tq.counter, lift)
		tq.active = len(b.active)
		b.active = append(b.active, tq)
	}
	q.seq++
	it.seq, it.tq, it.queued = q.seq, tq, true
	it.prev, it.next = tq.tail, nil
	if tq.tail != nil {
		tq.tail.next = it
	} else {
		tq.head = it
	}
	tq.tail = it
	tq.n++
	b.n++
	q.n++
}

// Remove takes it out of the queue (a cancelled or expired request) and
// reports whether it was queued.
func (q *Queue) Remove(it *Item) bool {
	if !it.queued {
		return false
	}
	tq := it.tq
	tq.unhold(it)
	if it.prev != nil {
		it.prev.next = it.next
	} else {
		tq.head = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	} else {
		tq.tail = it.prev
	}
	it.prev, it.next, it.queued = nil, nil, false
	tq.n--
	b := &q.bands[it.Band.Index()]
	b.n--
	q.n--
	if tq.n == 0 {
		last := len(b.active) - 1
		b.active[tq.active] = b.active[last]
		b.active[tq.active].active = tq.active
		b.active = b.active[:last]
		tq.active = -1
	}
	return true
}

// Next removes and returns the item to dispatch: of the highest band, the
// head of the tenant with the least counter (the earlier head on a tie)
// for which eligible (nil: any) holds, trying the tenants in that order
// and the bands from the highest down. Its tenant is charged its Cost. It
// returns nil when no head is eligible.
func (q *Queue) Next(eligible func(*Item) bool) *Item {
	if eligible == nil {
		return q.NextBest(1, nil, nil)
	}
	return q.NextBest(1, func(it *Item) (float64, bool) { return 0, eligible(it) }, nil)
}

// NextBest is Next with a look past the heads: within the tenant it
// serves (the least counter among those with an eligible item), it takes
// of the first lookahead items (at least the head) the one with the
// least score, the earliest on a tie. score returns an item's score and
// whether it is eligible at all (nil: every item scores 0); a score of 0
// or less ends the look, since no later item can beat it. Each eligible
// item before the one taken counts a pass (Item.Passes), so a score can
// bound how long an item is passed over. When nothing in the look scores
// at or below 0 and room is set, the look goes on to the holders (Hold)
// of each pod room says has room, beyond the first lookahead items: the
// first eligible of the next lookahead holders listed under each such
// pod competes with the look's best, and takes it on a lower score
// (every eligible item of the look then counts a pass). When, with room
// set, nothing in the look is eligible and no holder is, the next
// lookahead items may go: the first of them that scores at or below 0,
// else the least that scores at most Lossless, so that pods with room do
// not idle while the head of the queue waits for other pods, and nothing
// that would lose a prefix is taken from beyond the look. The tenants'
// order, and so the fair shares, are Next's: only the order within one
// tenant's queue changes.
func (q *Queue) NextBest(lookahead int, score func(*Item) (float64, bool), room func(pod string) bool) *Item {
	lookahead = max(lookahead, 1)
	for bi := auth.NumPriorities - 1; bi >= 0; bi-- {
		b := &q.bands[bi]
		if b.n == 0 {
			continue
		}
		var tried []*tenantQueue // the tenants with nothing eligible, rarely any
		for {
			var best *tenantQueue
			for _, tq := range b.active {
				if contains(tried, tq) {
					continue
				}
				if best == nil || tq.counter < best.counter || (tq.counter == best.counter && tq.head.seq < best.head.seq) {
					best = tq
				}
			}
			if best == nil {
				break
			}
			if it := bestOf(best, lookahead, score, room); it != nil {
				q.Remove(it)
				best.counter += it.Cost / best.weight
				b.floor = best.counter
				return it
			}
			tried = append(tried, best)
		}
	}
	return nil
}

// Lossless is the highest score NextBest takes from beyond its look when
// nothing in the look is eligible: a score at or below it says the item
// loses nothing on its pod.
const Lossless = 1e-9

// bestOf returns, of the first n items of tq, the eligible one with the
// least score (the earliest on a tie), or, when none scores at or below 0,
// a holder of a pod with room beyond them that scores less (heldBest), or,
// when none is eligible, the best of the next n that scores at most
// Lossless (with room only); nil when nothing is. The eligible items
// before the one taken are counted passed over.
func bestOf(tq *tenantQueue, n int, score func(*Item) (float64, bool), room func(string) bool) *Item {
	if score == nil {
		return tq.head
	}
	var buf [32]*Item
	eligible := buf[:0] // the eligible items seen, in order
	pick := -1          // the one of least score among them
	var least float64
	// add records an eligible item, and reports whether the look may end:
	// a score at or below 0, which no later item can beat.
	add := func(it *Item, s float64) bool {
		eligible = append(eligible, it)
		if pick >= 0 && s >= least {
			return false
		}
		pick, least = len(eligible)-1, s
		return s <= 0
	}
	var last uint64 // the last item the look scored
	look := n
	it := tq.head
	for ; it != nil && n > 0; it, n = it.next, n-1 {
		last = it.seq
		if s, ok := score(it); ok && add(it, s) {
			return takeOf(eligible, pick)
		}
	}
	if it != nil && room != nil && len(tq.holders) > 0 {
		if h, s := tq.heldBest(look, last, score, room); h != nil && (pick < 0 || s < least) {
			for _, p := range eligible {
				p.passes++
			}
			return h
		}
	}
	if pick < 0 && it != nil && room != nil {
		// Nothing in the look may go (its requests wait for other pods,
		// or for their leaders), and no holder beyond it: rather than
		// leave the pods with room idle, one of the next look items that
		// loses nothing on its pod may.
		for k := look; it != nil && k > 0; it, k = it.next, k-1 {
			if s, ok := score(it); ok && s <= Lossless && add(it, s) {
				break
			}
		}
	}
	if pick < 0 {
		return nil
	}
	return takeOf(eligible, pick)
}

// takeOf counts the eligible items before eligible[pick] passed over and
// returns it.
func takeOf(eligible []*Item, pick int) *Item {
	for _, p := range eligible[:pick] {
		p.passes++
	}
	return eligible[pick]
}

func contains(s []*tenantQueue, tq *tenantQueue) bool {
	for _, x := range s {
		if x == tq {
			return true
		}
	}
	return false
}

// Victim returns the item to shed when the queue is full and a request of
// band incoming arrives: the newest item of the tenant with the largest
// counter in the lowest band that is below incoming; nil when every item
// waiting is at incoming's band or above (the incoming request is the one
// to refuse). It does not remove the item.
func (q *Queue) Victim(incoming auth.Priority) *Item {
	for bi := 0; bi < incoming.Index(); bi++ {
		b := &q.bands[bi]
		var worst *tenantQueue
		for _, tq := range b.active {
			if worst == nil || tq.counter > worst.counter || (tq.counter == worst.counter && tq.tail.seq > worst.tail.seq) {
				worst = tq
			}
		}
		if worst != nil {
			return worst.tail
		}
	}
	return nil
}

// Charge adds tokens (negative: a refund) to the counter of tenant in
// band b, at its weight: what a request served outside the queue cost,
// or the difference between a dispatched request's real usage and its
// Cost. A tenant not seen before starts at the band's floor.
func (q *Queue) Charge(tenant string, b auth.Priority, weight, tokens float64) {
	tq := q.tenant(b.Index(), tenant, weight)
	tq.counter += tokens / tq.weight
}

// Counter returns tenant's virtual token counter in band b (0 for a
// tenant not seen).
func (q *Queue) Counter(tenant string, b auth.Priority) float64 {
	if tq := q.bands[b.Index()].tenants[tenant]; tq != nil {
		return tq.counter
	}
	return 0
}
