package flowcontrol

import (
	"context"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// Grant is an admitted request's hold on the controller. Its methods are
// called from the request's own goroutine.
type Grant struct {
	c       *Controller
	tenant  string
	band    auth.Priority
	weight  float64
	charged float64 // tokens charged to the tenant's counter at admission
	waited  time.Duration
	queued  bool
	started bool
	done    bool
	// counted says the request is counted in flight (headroom.go);
	// reserve is the headroom it must leave free (Place); at is the index
	// of the pod with room its admission at once found in its pods.
	counted bool
	reserve float64
	at      int
	// w is the request's waiter when it waited: a leader's followers are
	// released when it starts (follow.go).
	w *waiter
}

// Place returns the index in pods (the request's pods, best first, after
// a re-pick when it waited) of the pod it must go to instead of the
// first, or -1 to go to the first. A pick that is saturated while a pod
// after it has room would queue the request in the engine, behind
// requests no one ordered: it goes to the best pod with room instead,
// among those open to it after its wait (detours, for each of pods, are
// the re-pick's Request.Detours: Config.AffinityWait). A request
// admitted while it had to leave the headroom free for others
// (Config.Headroom) counts as room only what lies beyond the headroom.
// With no such room (the load moved since the admission) it goes to its
// pick. A request admitted at once must be placed among the pods it was
// admitted for: the admission's own answer is returned, with no second
// question to the pods.
func (g *Grant) Place(pods []string, detours []float64) int {
	if g == nil || len(pods) < 2 {
		return -1
	}
	if !g.queued {
		if g.at > 0 {
			return g.at
		}
		return -1
	}
	c := g.c
	if c.sat == nil {
		return -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := Request{Pods: pods, Detours: detours}
	now := c.now()
	waited := g.waited
	if g.w != nil {
		waited = affinityWaited(g.w, now)
	}
	// Its own dispatch's claim does not keep it from its pod.
	own := ""
	if g.w != nil && g.w.claim != "" {
		own = g.w.claim
		c.claimed[own]--
	}
	i, _ := c.roomFor(&r, g.reserve, waited, g.w, now)
	if own != "" {
		c.claimed[own]++
	}
	if i > 0 {
		return i
	}
	return -1
}

// LeaderPod returns the pod the request's leader started on
// (Request.Follows), when it has room for the request (its own dispatch's
// claim aside); "" otherwise, or when it follows no leader.
func (g *Grant) LeaderPod() string {
	if g == nil || !g.queued || g.w == nil {
		return ""
	}
	c := g.c
	c.mu.Lock()
	defer c.mu.Unlock()
	f := followed(g.w)
	if f == "" || c.sat == nil || (c.claimed[f] != 0 && f != g.w.claim) || c.sat.Saturated(f, g.reserve) {
		return ""
	}
	return f
}

// Waited returns how long the request waited in the queue (0: admitted at
// once).
func (g *Grant) Waited() time.Duration { return g.waited }

// Queued reports whether the request waited in the queue: its decision
// is stale and must be re-picked.
func (g *Grant) Queued() bool { return g.queued }

// Band returns the request's band.
func (g *Grant) Band() auth.Priority { return g.band }

// Started tells the controller that a request dispatched from the queue
// has been re-picked and its load recorded where the pods' saturation is
// judged, so the queue may dispatch the next. Calls after the first do
// nothing, as do calls on a nil Grant; Done implies it.
func (g *Grant) Started() { g.StartedOn("") }

// StartedOn is Started for a request that went to pod: the requests that
// follow it (Request.Follows) may go, to pod first.
func (g *Grant) StartedOn(pod string) {
	if g == nil || g.started {
		return
	}
	g.started = true
	c := g.c
	c.mu.Lock()
	c.pending--
	c.unclaimLocked(g.w)
	c.releaseFollowersLocked(g.w, pod)
	c.dispatchLocked()
	c.mu.Unlock()
}

// Done ends the request: tokens is what it was served (prompt and output
// tokens; negative when unknown, which keeps the estimate it was charged),
// which corrects its tenant's counter, and the queue dispatches into the
// room it leaves. Calls after the first, or on a nil Grant, do nothing.
func (g *Grant) Done(tokens int) {
	if g == nil || g.done {
		return
	}
	g.done = true
	c := g.c
	served := g.charged
	if tokens >= 0 {
		served = float64(tokens)
	}
	c.mu.Lock()
	if !g.started {
		g.started = true
		c.pending--
		c.unclaimLocked(g.w)
		c.releaseFollowersLocked(g.w, "")
	}
	if c.cfg.Enabled {
		c.q.Charge(g.tenant, g.band, g.weight, served-g.charged)
	}
	if g.counted {
		c.grantedLocked(g.tenant, g.band, -1)
	}
	c.stats.ServedTokens[g.tenant] += served
	c.obs.Served(g.tenant, g.band, served, weightOf(g.weight))
	c.dispatchLocked()
	c.mu.Unlock()
}

func weightOf(w float64) float64 {
	if w > 0 {
		return w
	}
	return 1
}

// retryAfter is the Retry-After of a refused request: the wait a new
// request of its band would have, at least a second.
func retryAfter(est time.Duration) time.Duration { return max(est, time.Second) }

// WaitEstimate returns how long a new request of band would wait now:
// the requests queued at its band or above, and itself, times the recent
// interval between dispatches, capped at the default deadline; 0 when
// none waits (or flow control is off). The global tier gossips it.
func (c *Controller) WaitEstimate(band auth.Priority) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.estimateLocked(band)
}

func (c *Controller) estimateLocked(band auth.Priority) time.Duration {
	ahead := c.q.AtOrAbove(band)
	if ahead == 0 || !c.cfg.Enabled {
		return 0
	}
	iv := c.interval
	if since := c.now().Sub(c.mark); since > iv {
		iv = since // nothing left the queue for longer than the average
	}
	if iv <= 0 {
		iv = c.cfg.RecheckInterval
	}
	return min(time.Duration(ahead+1)*iv, c.cfg.DefaultDeadline)
}

// Stats returns a copy of the controller's counts.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	for i := range s.Left {
		s.Queued[i] = c.q.bands[i].n
		s.Left[i] = make(map[string]int, len(c.stats.Left[i]))
		for k, v := range c.stats.Left[i] {
			s.Left[i][k] = v
		}
	}
	s.ServedTokens = make(map[string]float64, len(c.stats.ServedTokens))
	for k, v := range c.stats.ServedTokens {
		s.ServedTokens[k] = v
	}
	return s
}

// Run looks at the pods' load again every RecheckInterval while requests
// wait (the engines' metrics change between requests), until ctx ends;
// then it refuses every request still waiting with ErrClosed, refuses new
// ones, and returns. The caller owns the goroutine that runs it.
func (c *Controller) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.RecheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.close()
			return
		case <-t.C:
			c.recheck()
		}
	}
}

// recheck looks at the pods' load again and dispatches what it can.
func (c *Controller) recheck() {
	c.mu.Lock()
	c.dispatchLocked()
	c.mu.Unlock()
}

// close refuses every waiting request with ErrClosed.
func (c *Controller) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	now := c.now()
	for {
		it := c.q.Next(nil)
		if it == nil {
			return
		}
		w := it.Value.(*waiter)
		c.obs.Queued(w.req.Tenant, w.req.Band, -1)
		c.leftLocked(w.req, now.Sub(w.since), OutcomeClosed)
		w.ch <- ErrClosed
	}
}
