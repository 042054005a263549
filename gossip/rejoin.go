package gossip

import (
	"context"
	"math/rand/v2"
	"net"
	"time"
)

// departed is a member that left or died: where to knock to rejoin it.
type departed struct {
	addr string
	at   time.Time
}

// rejoinState is what the rejoin loop last found; guarded by Node.mu.
type rejoinState struct {
	missingSeeds []string  // configured seeds not in the pool
	remembered   int       // departed members being rejoined
	lastAttempt  time.Time // of the last Join the loop made
	lastErr      string    // of that Join when it reached no one
	rejoins      uint64    // Joins that reached someone
}

// forgetLocked drops the departed record of a member that is back; n.mu
// held.
func (n *Node) forgetLocked(name string) { delete(n.departed, name) }

// rememberLocked records a member that left or died, evicting the oldest
// record beyond Config.RememberMembers; n.mu held.
func (n *Node) rememberLocked(m Member, now time.Time) {
	if n.cfg.RememberMembers == 0 || m.Name == n.cfg.NodeName || m.Addr == "" {
		return
	}
	n.departed[m.Name] = departed{addr: m.Addr, at: now}
	for len(n.departed) > n.cfg.RememberMembers {
		oldest, first := "", true
		for name, d := range n.departed {
			if first || d.at.Before(n.departed[oldest].at) {
				oldest, first = name, false
			}
		}
		delete(n.departed, oldest)
	}
}

// rejoinTargets returns the addresses to join now: the configured seeds
// that no live member answers at (this node's own address aside) and the
// last addresses of departed members, remembered for Config.RememberFor,
// that are not live again. It records the missing seeds for PoolStatus.
func (n *Node) rejoinTargets(now time.Time) []string {
	live := map[string]bool{}     // live members' names
	liveAddr := map[string]bool{} // and addresses
	for _, m := range n.Members() {
		if m.State != StateDead && m.Name != n.cfg.NodeName {
			live[m.Name], liveAddr[m.Addr] = true, true
		}
	}
	var missing []string
	for _, s := range n.cfg.Seeds {
		if !n.seedPresent(s, liveAddr) {
			missing = append(missing, s)
		}
	}
	targets := append([]string(nil), missing...)
	n.mu.Lock()
	for name, d := range n.departed {
		switch {
		case now.Sub(d.at) > n.cfg.RememberFor:
			delete(n.departed, name)
		case live[name]:
			delete(n.departed, name) // back; NotifyJoin may not have run yet
		case !liveAddr[d.addr] && !contains(targets, d.addr):
			targets = append(targets, d.addr)
		}
	}
	n.rejoin.missingSeeds = missing
	n.rejoin.remembered = len(n.departed)
	n.mu.Unlock()
	return targets
}

// seedPresent reports whether seed (host:port) is this node or a live
// member: its address as given, or, for a host name, any address it
// resolves to (within a second; a name that does not resolve is absent).
func (n *Node) seedPresent(seed string, liveAddr map[string]bool) bool {
	if seed == n.addr || liveAddr[seed] {
		return true
	}
	host, port, err := net.SplitHostPort(seed)
	if err != nil || net.ParseIP(host) != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return false
	}
	for _, ip := range ips {
		a := net.JoinHostPort(ip, port)
		if a == n.addr || liveAddr[a] {
			return true
		}
	}
	return false
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// rejoinLoop joins the rejoin targets every Config.RejoinInterval (with
// a fifth of jitter either way, so a pool restarted at once does not knock
// in step) until the node stops. A round that reaches fewer than all its
// targets doubles the wait, up to Config.RejoinMaxInterval; one that has
// nothing to do or reaches them all returns to RejoinInterval. With
// Config.JoinInBackground the first round runs at once.
func (n *Node) rejoinLoop() {
	wait := n.cfg.RejoinInterval
	first := n.cfg.JoinInBackground && len(n.cfg.Seeds) > 0
	timer := time.NewTimer(0)
	if !first {
		timer.Reset(jitter(wait))
	}
	defer timer.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-timer.C:
		}
		targets := n.rejoinTargets(time.Now())
		if len(targets) == 0 {
			wait = n.cfg.RejoinInterval
			timer.Reset(jitter(wait))
			continue
		}
		k, err := n.Join(targets)
		n.mu.Lock()
		n.rejoin.lastAttempt = time.Now()
		n.rejoin.lastErr = ""
		if err != nil {
			n.rejoin.lastErr = err.Error()
		}
		if k > 0 {
			n.rejoin.rejoins++
		}
		if k == len(targets) {
			n.rejoin.missingSeeds = nil // every one answered, so joined
		}
		n.mu.Unlock()
		if err != nil {
			n.logger.Printf("[WARN] gossip: rejoin: none of %v answered: %v", targets, err)
		} else if k > 0 {
			n.logger.Printf("[INFO] gossip: rejoin: %d of %v answered", k, targets)
		}
		if k < len(targets) {
			wait = min(2*wait, n.cfg.RejoinMaxInterval)
		} else {
			wait = n.cfg.RejoinInterval
		}
		timer.Reset(jitter(wait))
	}
}

// jitter returns d scaled by a random factor in [0.8, 1.2).
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
