package flowcontrol

import "time"

// Following a queued request.
//
// A conversation's next turn often arrives while the turn before it
// still waits in the queue: its prefix is then on no pod yet, its
// decision matched only what the pods held before, and a freed pod would
// take it at once, away from where that prefix is about to be computed;
// the two then prefill it twice, on two pods. A request that names the
// queued request its prompt extends (Request.Follows, found by the cell
// from the prompts' blocks) is therefore held until that leader has
// started on its pod, and then goes there: the leader's pod is open to it
// at once, every other pod only once it has waited, since the leader
// started, twice as long as the blocks it would lose there
// (Request.FollowBlocks) take to prefill. The first of the two is the
// leader's own prefill of those blocks: a follower that left when its
// leader started would compute them again in that time, and one that
// joins the leader's pod before the leader stored them computes them
// beside it, so until then waiting costs it nothing that leaving would
// save. The second is the ski-rental rule of Config.AffinityWait: it then
// waits for the leader's pod at most as long as the prefill leaving
// would cost. A leader that leaves the queue without starting (refused,
// cancelled) frees its followers to go anywhere.

// follower is a waiting request's relation to the leader it follows.
type follower struct {
	// leader is the leader's waiter while it has not started; nil once it
	// started or left.
	leader *waiter
	// pod is where the leader started ("" when it left without starting);
	// freed is when.
	pod   string
	freed time.Time
}

// blocked reports whether w must still wait for its leader.
func (w *waiter) blocked() bool { return w.follow != nil && w.follow.leader != nil }

// followLocked links a request about to wait to the leader it names, when
// that leader waits or has not started yet.
func (c *Controller) followLocked(w *waiter) {
	if w.req.Follows == 0 {
		return
	}
	l, ok := c.leaders[w.req.Follows]
	if !ok {
		return
	}
	w.follow = &follower{leader: l}
	l.followers = append(l.followers, w)
}

// leadLocked registers w as a possible leader while it waits.
func (c *Controller) leadLocked(w *waiter) {
	if w.req.Key != 0 {
		c.leaders[w.req.Key] = w
	}
}

// releaseFollowersLocked ends l's lead: it started on pod ("" when it left
// without starting), and its followers may go.
func (c *Controller) releaseFollowersLocked(l *waiter, pod string) {
	if l == nil || l.req.Key == 0 {
		return
	}
	if c.leaders[l.req.Key] == l {
		delete(c.leaders, l.req.Key)
	}
	now := c.now()
	for _, f := range l.followers {
		if f.follow != nil && f.follow.leader == l {
			f.follow.leader, f.follow.pod, f.follow.freed = nil, pod, now
			if pod != "" && f.item != nil && f.item.Queued() {
				// Its leader's pod may take it from anywhere in the queue.
				c.holdLocked(f)
				c.q.Hold(f.item, pod)
			}
		}
	}
	l.followers = nil
}

// followOpen reports whether a follower whose leader started may go to
// pod after now: the leader's pod at once, another once it has waited,
// since the leader started, the leader's prefill of the blocks it would
// lose there and then as long again (the package comment above).
func (c *Controller) followOpen(w *waiter, pod string, now time.Time) bool {
	f := w.follow
	if f == nil || f.pod == "" || pod == f.pod || !c.cfg.AffinityWait || c.cfg.PrefillPerBlock <= 0 {
		return true
	}
	return now.Sub(f.freed) >= 2*time.Duration(w.req.FollowBlocks*float64(c.cfg.PrefillPerBlock))
}

// followed returns the pod w's leader started on ("" when w follows no
// leader, or its leader left without starting).
func followed(w *waiter) string {
	if w == nil || w.follow == nil {
		return ""
	}
	return w.follow.pod
}

// affinityWaited is the wait the ski-rental rule counts for w: since its
// leader started, for a follower; else since a pod first had room for it
// that its affinity kept it from (waiter.open): the time it queued
// behind others while no pod had room is no wait for its pick.
func affinityWaited(w *waiter, now time.Time) time.Duration {
	if w.follow != nil && w.follow.pod != "" {
		return now.Sub(w.follow.freed)
	}
	if w.open.IsZero() {
		return 0
	}
	return now.Sub(w.open)
}
