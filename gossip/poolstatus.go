package gossip

import (
	"fmt"
	"strings"
	"time"
)

// PoolStatus is how a node stands in its pool: whether anyone else is
// there, and what the rejoin loop is knocking at (see Config.RejoinInterval).
type PoolStatus struct {
	// Members counts the live (alive or suspect) members, this node
	// included.
	Members int
	// Alone is true when no other member is live: the node cannot reach
	// the pool (or is the pool's only member, which a configured seed or a
	// remembered member says is not how it should be).
	Alone bool
	// MissingSeeds are the configured seeds that no live member answered
	// at when the rejoin loop last looked.
	MissingSeeds []string
	// Remembered counts the departed members whose last addresses the
	// rejoin loop knocks at.
	Remembered int
	// LastAttempt is when the rejoin loop last called Join (zero: never);
	// LastError is that Join's error when it reached no one.
	LastAttempt time.Time
	LastError   string
	// Rejoins counts the loop's Joins that reached a member.
	Rejoins uint64
}

// PoolStatus returns the node's standing in its pool.
func (n *Node) PoolStatus() PoolStatus {
	var s PoolStatus
	liveAddr := map[string]bool{}
	for _, m := range n.Members() {
		if m.State != StateDead {
			s.Members++
			liveAddr[m.Addr] = true
		}
	}
	if s.Members == 0 {
		s.Members = 1 // this node, once shut down
	}
	s.Alone = s.Members == 1
	n.mu.Lock()
	// The loop's list, less the seeds live again since (by address; a
	// host name waits for the loop's next look).
	for _, a := range n.rejoin.missingSeeds {
		if !liveAddr[a] {
			s.MissingSeeds = append(s.MissingSeeds, a)
		}
	}
	s.Remembered = n.rejoin.remembered
	s.LastAttempt, s.LastError, s.Rejoins = n.rejoin.lastAttempt, n.rejoin.lastErr, n.rejoin.rejoins
	n.mu.Unlock()
	return s
}

// Degraded returns why the node is not fully in its pool ("" when it
// is): alone, and which seeds are missing. A node with no seeds and no
// departed member to knock at is alone by design (the first node of a
// pool) until someone joins it, and says so too.
func (s PoolStatus) Degraded() string {
	var why []string
	if s.Alone {
		why = append(why, "alone in the gossip pool")
	}
	if len(s.MissingSeeds) > 0 {
		why = append(why, fmt.Sprintf("seeds not in the pool: %s", strings.Join(s.MissingSeeds, ", ")))
	}
	if s.Alone && s.LastError != "" {
		why = append(why, "last rejoin: "+s.LastError)
	}
	return strings.Join(why, "; ")
}
