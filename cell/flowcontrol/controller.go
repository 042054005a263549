package flowcontrol

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// Saturation says whether a pod can take another request now. Saturated
// is called under the controller's lock, from any goroutine: it must be
// safe for concurrent use, quick, and must not call the controller.
type Saturation interface {
	// Saturated reports whether pod cannot take another request while
	// keeping reserve (a fraction under 1; 0 for none) of each of its
	// limits free: at reserve 0, whether it is at its limits.
	Saturated(pod string, reserve float64) bool
}

// Request is what the controller needs to know of a request asking to
// go to its pods.
type Request struct {
	// Tenant names the request's tenant ("" for none).
	Tenant string
	// Band is its priority band.
	Band auth.Priority
	// Weight is its tenant's fair-share weight (0 counts as 1).
	Weight float64
	// MaxWait is its tenant's bound on the wait (0: the controller's
	// default deadline only).
	MaxWait time.Duration
	// ClientTimeout is the client's own bound on the wait (TimeoutHeader;
	// 0: none). A deadline of the Admit context bounds it too.
	ClientTimeout time.Duration
	// Tokens is what the request is expected to cost: its prompt tokens
	// and the output it asks for (or Config.OutputTokensEstimate).
	Tokens int
	// Pods are the pods its decision found acceptable, best first: it
	// waits while every one of them is saturated. The controller keeps
	// the slice while the request waits.
	Pods []string
	// Detours are, for each of Pods (nil: 0 for every one), what sending
	// the request there costs beyond its pick: the prefix blocks it would
	// prefill again that its pick holds. A pod that frees up goes to the
	// waiting request it costs the least (Config.AffinityLookahead). The
	// controller keeps the slice while the request waits.
	Detours []float64
	// Key names the request while it waits, for requests that follow it
	// (0: none may). Follows is the Key of a waiting request whose prompt
	// this one's extends (0: none), and FollowBlocks the prefix blocks it
	// shares with that leader beyond what its pods hold: it waits until
	// the leader starts, and then for the leader's pod at most as long as
	// those blocks take to prefill (follow.go).
	Key, Follows uint64
	FollowBlocks float64
	// Queued, when set, is called once, without the controller's lock,
	// when the request joins the queue (it may already be dispatched by
	// then): the cell indexes the request's prompt for followers only
	// then, since most requests never wait.
	Queued func()
}

// detour returns the request's detour to Pods[i] (0 past Detours' end).
func (r *Request) detour(i int) float64 {
	if i < len(r.Detours) {
		return r.Detours[i]
	}
	return 0
}

// waiter is a request waiting in the queue: the controller sends its
// outcome on ch exactly once, under the lock, after taking its item out.
type waiter struct {
	req   Request
	since time.Time
	ch    chan error // buffered 1: nil is a grant
	// byClient says its deadline is the client's own bound (shorter than
	// the default and the tenant's).
	byClient bool
	// reserve is the headroom its dispatch had to leave free (its grant's).
	reserve float64
	// follow is its relation to the leader it follows (nil: none);
	// followers are the waiting requests that follow it (follow.go).
	follow    *follower
	followers []*waiter
	// held is the most its pick holds beyond a pod that holds least: its
	// largest detour (affinityScore). holder says it counts in
	// Controller.holders: it holds a prefix somewhere, or follows a
	// leader that started.
	held   float64
	holder bool
	// item is its place in the queue.
	item *Item
	// at is the index in req.Pods of the pod its dispatch found room on;
	// claim is that pod while the dispatch has not started.
	at    int
	claim string
	// open is when a pod first had room for it while its affinity wait
	// held it back (zero: not yet): the ski-rental clock (affinityWaited).
	open time.Time
}

// Controller is a cell's flow control: the Queue behind a lock, the
// requests waiting on it, and the estimate of how long a new request
// would wait. It is safe for concurrent use. Run drives its periodic
// recheck; without Run, the queue still moves whenever a request ends.
type Controller struct {
	cfg Config
	sat Saturation
	obs Observer
	now func() time.Time

	mu sync.Mutex
	q  *Queue
	// claimed counts, by pod, the dispatched requests not started yet
	// that were dispatched for it: a claimed pod takes no other dispatch
	// until its load shows the first, so several pods fill at once while
	// no one pod is handed the whole queue.
	claimed map[string]int
	// pending counts the requests dispatched from the queue that have not
	// started (Grant.Started): the next one waits for them, so that one
	// freed slot is not handed to the whole queue before the pods' load
	// shows the first.
	pending int
	// interval is a moving average of the time between dispatches while
	// requests wait (WaitEstimate); mark is the last dispatch, or when the
	// queue last turned non-empty.
	interval time.Duration
	mark     time.Time
	closed   bool
	stats    Stats
	// leaders are the waiting (or dispatched, not yet started) requests
	// others may follow, by Request.Key.
	leaders map[uint64]*waiter
	// holders counts the waiting requests whose pick holds part of their
	// prefix (waiter.held > 0) or whose leader started (waiter.holder):
	// affinityScore. waiting counts them all, for Waiting.
	holders int
	waiting atomic.Int32
	// loads are the requests in flight and the last arrival of each band
	// and tenant, for the headroom (headroom.go).
	loads [auth.NumPriorities]bandLoad
}

// New returns a controller for cfg (which must be valid) that asks sat
// whether pods are saturated and tells obs (nil: nobody) what it does.
func New(cfg Config, sat Saturation, obs Observer) *Controller {
	if obs == nil {
		obs = nopObserver{}
	}
	c := &Controller{cfg: cfg, sat: sat, obs: obs, now: time.Now, q: NewQueue(), leaders: map[uint64]*waiter{},
		claimed: map[string]int{}}
	for i := range c.stats.Left {
		c.stats.Left[i] = map[string]int{}
	}
	c.stats.ServedTokens = map[string]float64{}
	return c
}

// Config returns the controller's configuration.
func (c *Controller) Config() Config { return c.cfg }

// roomFor returns the index of the first of r's pods with room while
// keeping reserve free, not claimed by a dispatch, and open to r after
// waiting waited (open) and, for a follower (w, nil for none), at now
// (followOpen), or -1; and, for a waiter whose affinity clock has not
// started (waiter.open), whether a pod had room that its affinity kept it
// from.
func (c *Controller) roomFor(r *Request, reserve float64, waited time.Duration, w *waiter, now time.Time) (at int, heldBack bool) {
	track := w != nil && w.open.IsZero()
	for i, p := range r.Pods {
		if c.claimed[p] != 0 {
			continue
		}
		if c.open(r, i, waited) && (w == nil || c.followOpen(w, p, now)) {
			if !c.sat.Saturated(p, reserve) {
				return i, heldBack
			}
			continue
		}
		if track && !heldBack && !c.sat.Saturated(p, reserve) {
			heldBack = true
		}
	}
	return -1, heldBack
}

// open reports whether r, having waited waited, may go to r.Pods[i]: at
// once when the pod costs it no detour or Config.AffinityWait is off,
// else once it has waited as long as the detour's prefill would take
// (the ski-rental rule: waiting longer for its pick than the prefill it
// saves loses more than it gains).
func (c *Controller) open(r *Request, i int, waited time.Duration) bool {
	d := r.detour(i)
	if d <= 0 || !c.cfg.AffinityWait || c.cfg.PrefillPerBlock <= 0 {
		return true
	}
	return waited >= time.Duration(d*float64(c.cfg.PrefillPerBlock))
}

// admissibleLocked returns the index in r.Pods of the pod r may go to
// now, having waited waited (-1: it must wait), and the headroom it must
// leave free there: none when its pick has room even with the headroom
// kept (the common case, one question to the pods), or when it need not
// keep it (restrictedLocked); else Config.Headroom. Only pods open to it
// (open) count; heldBack is roomFor's.
func (c *Controller) admissibleLocked(r *Request, now time.Time, waited time.Duration, w *waiter) (at int, reserve float64, heldBack bool) {
	if w != nil && w.blocked() {
		return -1, 0, false // its leader has not started
	}
	if c.sat == nil || len(r.Pods) == 0 {
		return 0, 0, false // nothing to wait for
	}
	h := c.cfg.Headroom
	if h > 0 && c.claimed[r.Pods[0]] == 0 && (w == nil || c.followOpen(w, r.Pods[0], now)) && !c.sat.Saturated(r.Pods[0], h) {
		return 0, 0, false
	}
	at, heldBack = c.roomFor(r, 0, waited, w, now)
	if at < 0 || h == 0 || !c.restrictedLocked(r.Tenant, r.Band, now) {
		return at, 0, heldBack
	}
	at, _ = c.roomFor(r, h, waited, w, now)
	return at, h, heldBack
}

// Admit returns when r may go to its pods: at once when nothing of its
// band or above waits and one of its pods has room, else when the queue
// dispatches it. A request that waited must be re-picked (Grant.Waited
// says so): the cache and the load moved meanwhile. The error is an
// *Error wrapping ErrDeadline or ErrShed (answer 429 with its RetryAfter),
// ctx's error when the client went away, or ErrClosed. On success the
// caller must call Grant.Done once the request ends.
func (c *Controller) Admit(ctx context.Context, r Request) (*Grant, error) {
	g := &Grant{c: c, tenant: r.Tenant, band: r.Band, weight: r.Weight}
	if !c.cfg.Enabled {
		g.started = true
		return g, nil
	}
	now := c.now()
	deadline := now.Add(c.cfg.DefaultDeadline)
	if r.MaxWait > 0 {
		deadline = minTime(deadline, now.Add(r.MaxWait))
	}
	// The client's own bound, when it is the shortest, makes the expiry
	// the client's choice (like a disconnect), not the cell refusing it.
	policy := deadline
	if r.ClientTimeout > 0 {
		deadline = minTime(deadline, now.Add(r.ClientTimeout))
	}
	if d, ok := ctx.Deadline(); ok {
		deadline = minTime(deadline, d)
	}
	byClient := deadline.Before(policy)
	bi := r.Band.Index()

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.arriveLocked(r.Tenant, r.Band, r.Weight, now)
	if _, leads := c.leaders[r.Follows]; c.q.AtOrAbove(r.Band) == 0 && c.pending == 0 && !leads {
		at, reserve, _ := c.admissibleLocked(&r, now, 0, nil)
		if reserve > 0 {
			c.stats.HeadroomKept++
		}
		if at >= 0 {
			c.stats.Admitted[bi]++
			g.charged, g.reserve, g.at = float64(r.Tokens), reserve, at
			c.q.Charge(r.Tenant, r.Band, r.Weight, g.charged)
			c.grantedLocked(r.Tenant, r.Band, 1)
			g.started, g.counted = true, true
			c.mu.Unlock()
			return g, nil
		}
	}
	if c.q.Len() >= c.cfg.MaxQueued {
		v := c.q.Victim(r.Band)
		if v == nil {
			c.leftLocked(r, 0, OutcomeRefused)
			est := c.estimateLocked(r.Band)
			c.mu.Unlock()
			return nil, &Error{Err: ErrShed, RetryAfter: retryAfter(est)}
		}
		c.shedLocked(v, now)
	}
	w := &waiter{req: r, since: now, ch: make(chan error, 1), byClient: byClient}
	for _, d := range r.Detours {
		w.held = max(w.held, d)
	}
	c.waiting.Add(1)
	it := &Item{Tenant: r.Tenant, Band: r.Band, Weight: r.Weight, Cost: float64(r.Tokens), Value: w}
	w.item = it
	if c.q.Len() == 0 {
		c.mark = now
	}
	c.followLocked(w)
	c.leadLocked(w)
	c.q.Push(it)
	if w.held > 0 {
		// The pods that hold its prefix as deeply as its pick may take
		// it from anywhere in the queue (queue_holders.go).
		c.holdLocked(w)
		for i, p := range r.Pods {
			if r.detour(i) == 0 {
				c.q.Hold(it, p)
			}
		}
	}
	c.obs.Queued(r.Tenant, r.Band, 1)
	c.dispatchLocked()
	c.mu.Unlock()
	if r.Queued != nil {
		r.Queued()
	}

	timer := time.NewTimer(deadline.Sub(now))
	defer timer.Stop()
	var err error
	select {
	case err = <-w.ch:
	case <-ctx.Done():
		err = c.leave(it, ctx.Err(), OutcomeCancelled)
	case <-timer.C:
		err = c.leave(it, &Error{Err: ErrDeadline}, OutcomeDeadline)
	}
	if err != nil {
		return nil, err
	}
	g.charged, g.waited, g.queued, g.counted, g.reserve, g.w = float64(r.Tokens), c.now().Sub(now), true, true, w.reserve, w
	if ctx.Err() != nil {
		// Dispatched as the client left: give the slot back.
		g.Done(0)
		return nil, ctx.Err()
	}
	return g, nil
}

// leave takes it out of the queue for a request that stops waiting with
// err, and returns err; when the queue already decided its outcome (a
// dispatch or a shed raced with the client or the timer), that outcome
// stands and is returned instead, so nothing is answered twice.
func (c *Controller) leave(it *Item, err error, outcome string) error {
	w := it.Value.(*waiter)
	c.mu.Lock()
	if !c.q.Remove(it) {
		c.mu.Unlock()
		return <-w.ch
	}
	c.unheldLocked(w)
	now := c.now()
	c.obs.Queued(w.req.Tenant, w.req.Band, -1)
	if outcome == OutcomeDeadline && !w.byClient {
		// A request that could not be served in time would have been
		// served before every request of a lower band: those cannot be
		// served in time either, and go first (lowest band first), so a
		// band is never refused while a lower one waits. A client whose
		// own short bound passed sheds nobody: it chose to leave.
		for v := c.q.Victim(w.req.Band); v != nil; v = c.q.Victim(w.req.Band) {
			c.shedLocked(v, now)
		}
	}
	if outcome == OutcomeDeadline && w.byClient {
		outcome = OutcomeClientDeadline
	}
	c.leftLocked(w.req, now.Sub(w.since), outcome)
	c.releaseFollowersLocked(w, "")
	if e, ok := err.(*Error); ok {
		e.Waited = now.Sub(w.since)
		e.RetryAfter = retryAfter(c.estimateLocked(w.req.Band))
	}
	c.dispatchLocked() // the head may have been this one
	c.mu.Unlock()
	return err
}

// shedLocked takes v out of the queue and refuses it with ErrShed.
func (c *Controller) shedLocked(v *Item, now time.Time) {
	vw := v.Value.(*waiter)
	c.q.Remove(v)
	c.unheldLocked(vw)
	c.obs.Queued(vw.req.Tenant, vw.req.Band, -1)
	c.leftLocked(vw.req, now.Sub(vw.since), OutcomeShed)
	c.releaseFollowersLocked(vw, "")
	vw.ch <- &Error{Err: ErrShed, Waited: now.Sub(vw.since), RetryAfter: retryAfter(c.estimateLocked(vw.req.Band))}
}

// leftLocked counts a request leaving the queue (or refused at its door).
func (c *Controller) leftLocked(r Request, waited time.Duration, outcome string) {
	bi := r.Band.Index()
	c.stats.Left[bi][outcome]++
	if r.Band == auth.PriorityCritical && (outcome == OutcomeDeadline || outcome == OutcomeShed || outcome == OutcomeRefused) &&
		c.q.BandLen(auth.PrioritySheddable) > 0 {
		c.stats.CriticalShedWhileSheddableQueued++
	}
	c.obs.Left(r.Tenant, r.Band, waited, outcome)
}

// dispatchLocked hands the queue's eligible requests grants, one per pod
// with room that no dispatch has claimed yet (claimed). Within the tenant
// served, the request dispatched is, of its first
// Config.AffinityLookahead, the one whose pod with room costs it the
// least detour (Request.Detours), so a freed pod takes a request that
// holds its prefix there before one that would prefill its prefix again;
// a request passed over Config.AffinityMaxPasses times is passed over no
// longer.
func (c *Controller) dispatchLocked() {
	for c.q.Len() > 0 && c.dispatchOneLocked() {
	}
}

// dispatchOneLocked dispatches one request, and reports whether another
// may follow: whether the look saw room on a pod besides the one it
// claimed (a look that saw none would be wasted).
func (c *Controller) dispatchOneLocked() bool {
	now := c.now()
	var seen [2]string // the first two pods with room the look saw
	var room func(string) bool
	if c.cfg.AffinityLookahead > 1 {
		room = c.roomLocked // a lookahead of 1 is first come, first served
	}
	it := c.q.NextBest(c.cfg.AffinityLookahead, func(it *Item) (float64, bool) {
		w := it.Value.(*waiter)
		at, reserve, heldBack := c.admissibleLocked(&w.req, now, affinityWaited(w, now), w)
		w.reserve, w.at = reserve, at
		if at >= 0 && at < len(w.req.Pods) && seen[1] == "" {
			if p := w.req.Pods[at]; seen[0] == "" {
				seen[0] = p
			} else if p != seen[0] {
				seen[1] = p
			}
		}
		if at < 0 {
			if heldBack && w.open.IsZero() {
				w.open = now // a pod has room, but affinity holds it back
			}
			return 0, false
		}
		if it.Passes() >= c.cfg.AffinityMaxPasses {
			return math.Inf(-1), true
		}
		return c.scoreLocked(w, at), true
	}, room)
	if it == nil {
		return false
	}
	w := it.Value.(*waiter)
	c.unheldLocked(w)
	if head := c.q.headSeq(w.req.Tenant, w.req.Band); head != 0 && head < it.Seq() {
		c.stats.AffinityReordered++
	}
	c.grantedLocked(w.req.Tenant, w.req.Band, 1)
	if iv := now.Sub(c.mark); c.interval == 0 {
		c.interval = iv
	} else {
		c.interval = (4*c.interval + iv) / 5
	}
	c.mark = now
	c.pending++
	if w.at >= 0 && w.at < len(w.req.Pods) {
		w.claim = w.req.Pods[w.at]
		c.claimed[w.claim]++
	}
	c.obs.Queued(w.req.Tenant, w.req.Band, -1)
	c.leftLocked(w.req, now.Sub(w.since), OutcomeDispatched)
	w.ch <- nil
	return seen[1] != "" || w.claim == ""
}

// unclaimLocked ends the claim of w's dispatch (it started or ended).
func (c *Controller) unclaimLocked(w *waiter) {
	if w == nil || w.claim == "" {
		return
	}
	if c.claimed[w.claim]--; c.claimed[w.claim] <= 0 {
		delete(c.claimed, w.claim)
	}
	w.claim = ""
}

// scoreLocked is affinityScore for w on w.req.Pods[at]. A follower whose
// leader started holds, on the leader's pod, what it shares with the
// leader (its prefix is being computed there), and anywhere else
// prefills that again, which its own decision, made before the leader
// started, did not know of.
func (c *Controller) scoreLocked(w *waiter, at int) float64 {
	detour := w.req.detour(at)
	if f := w.follow; f != nil && f.pod != "" {
		if f.pod == w.req.Pods[at] {
			return affinityScore(0, w.held+w.req.FollowBlocks, true)
		}
		detour = max(detour, w.req.FollowBlocks)
	}
	return affinityScore(detour, w.held, c.holders > 0)
}

// affinityScore ranks a waiting request for a pod (lower first): the
// prefix the pod costs it (its detour there), and on a tie, the more of
// its prefix the pod holds the better, so that a pod that frees goes to a
// request it holds the prefix of before one that would be as well served
// anywhere (whose prefix nobody holds); the tie-break weighs a block a
// millionth of a detour's, so it never outweighs one. Queue.NextBest ends
// its look at the first score at or below 0: a request that loses nothing
// anywhere scores 0 while no waiting request holds a prefix (holders
// false, the common case: the look stops at the head), and just above 0
// otherwise, so that the look goes on to a holder.
func affinityScore(detour, held float64, holders bool) float64 {
	if s := detour - 1e-6*(held-detour); s != 0 || !holders {
		return s
	}
	return Lossless
}

// unheldLocked counts w, which leaves the queue, out of the waiting
// requests and the holders.
func (c *Controller) unheldLocked(w *waiter) {
	c.waiting.Add(-1)
	if w.holder {
		c.holders--
	}
}

// holdLocked counts w among the holders.
func (c *Controller) holdLocked(w *waiter) {
	if !w.holder {
		w.holder = true
		c.holders++
	}
}

// roomLocked reports whether pod may take a dispatch now: it is not
// claimed by one and has room (without headroom), for Queue.NextBest's
// look at the pod's holders.
func (c *Controller) roomLocked(pod string) bool {
	return c.claimed[pod] == 0 && c.sat != nil && !c.sat.Saturated(pod, 0)
}

// Waiting returns how many requests wait in the queue now, without the
// lock.
func (c *Controller) Waiting() int { return int(c.waiting.Load()) }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
