package flowcontrol

import (
	"math"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// Headroom: a pod's last slots are kept for the requests that need them.
//
// Without it the controller is work-conserving: a tenant far over its
// share fills every slot the others leave empty, and a quiet tenant's
// request that arrives a moment later waits for one of those requests to
// end (hundreds of milliseconds with long prompts and no pre-emption in
// the engines). With headroom, a request that is over its share, while
// another active tenant of its band is under its own (or while a higher
// band is active), is admitted only to a pod below its limits less
// Config.Headroom of them; the room above is for the others, who find it
// free when they arrive.

// tenantLoad is what the controller knows of one tenant in one band: its
// requests granted and not done, its weight, and when it last asked.
type tenantLoad struct {
	inflight int
	weight   float64
	last     time.Time
}

// bandLoad is the same for a whole band.
type bandLoad struct {
	tenants  map[string]*tenantLoad
	inflight int
	last     time.Time
}

// arriveLocked notes that tenant asks in band b now.
func (c *Controller) arriveLocked(tenant string, b auth.Priority, weight float64, now time.Time) {
	bl := &c.loads[b.Index()]
	if bl.tenants == nil {
		bl.tenants = map[string]*tenantLoad{}
	}
	tl := bl.tenants[tenant]
	if tl == nil {
		tl = &tenantLoad{}
		bl.tenants[tenant] = tl
	}
	tl.weight, tl.last, bl.last = weightOf(weight), now, now
}

// grantedLocked counts a request of tenant in band b that goes to its pod
// (delta 1) or ends (delta -1).
func (c *Controller) grantedLocked(tenant string, b auth.Priority, delta int) {
	bl := &c.loads[b.Index()]
	bl.inflight += delta
	if tl := bl.tenants[tenant]; tl != nil {
		tl.inflight += delta
	}
}

// activeLocked reports whether a tenant counts for the headroom now: it
// has requests in flight or waiting, or asked within the active window.
func (c *Controller) activeLocked(name string, b auth.Priority, tl *tenantLoad, now time.Time) bool {
	return tl.inflight > 0 || now.Sub(tl.last) < c.cfg.ActiveWindow || c.q.Waiting(name, b) > 0
}

// restrictedLocked reports whether a request of tenant in band b must
// leave the headroom free: a higher band is active, or the tenant is at
// or over its share of its band's requests in flight while another
// active tenant of the band is under its own and is not backlogged (at
// most one request waiting: the one just arrived). A tenant's share is
// its weight's part of the active tenants' weights; alone, a tenant is
// never restricted, so the headroom costs nothing when nobody needs it.
// The headroom is for a tenant's next request; a backlogged tenant's
// share is the queue's token counters' to keep, which the headroom must
// not override (it counts requests in flight, the counters tokens
// served: with both, two backlogged tenants' token shares drift from
// their weights by the difference in their requests' sizes).
func (c *Controller) restrictedLocked(tenant string, b auth.Priority, now time.Time) bool {
	for i := b.Index() + 1; i < auth.NumPriorities; i++ {
		hb := &c.loads[i]
		if hb.inflight > 0 || (!hb.last.IsZero() && now.Sub(hb.last) < c.cfg.ActiveWindow) || c.q.BandLen(auth.Priorities()[i]) > 0 {
			return true
		}
	}
	bl := &c.loads[b.Index()]
	var sumW float64
	total, active := 0, 0
	for name, tl := range bl.tenants {
		if !c.activeLocked(name, b, tl, now) {
			if name != tenant {
				delete(bl.tenants, name) // forgotten until it asks again
			}
			continue
		}
		sumW += tl.weight
		total += tl.inflight
		active++
	}
	self := bl.tenants[tenant]
	if active < 2 || self == nil || underShare(self, total, sumW) {
		return false
	}
	for name, tl := range bl.tenants {
		if name != tenant && c.activeLocked(name, b, tl, now) && underShare(tl, total, sumW) && c.q.Waiting(name, b) <= 1 {
			return true
		}
	}
	return false
}

// underShare reports whether tl has fewer requests in flight than its
// weight's part of total.
func underShare(tl *tenantLoad, total int, sumW float64) bool {
	return float64(tl.inflight)*sumW < float64(total)*tl.weight
}

// ReservedLimit is limit less reserve (a fraction) of it, rounded so that
// any reserve over 0 keeps at least one unit of a limit of two or more;
// never below 1, so a limit of one keeps nothing back. A Saturation uses
// it for its request counts.
func ReservedLimit(limit int, reserve float64) int {
	if reserve <= 0 || limit <= 1 {
		return limit
	}
	return max(1, limit-int(math.Ceil(reserve*float64(limit))))
}
