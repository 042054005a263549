package auth

import (
	"errors"
	"fmt"
	"strings"
)

// PriorityHeader is the request header a client sends to lower its
// request's priority band below its tenant's ("sheddable", "standard",
// "critical"). It never raises a request above its tenant's band.
const PriorityHeader = "X-Cellrouter-Priority"

// ErrPriority: a priority header or key file value names no band (HTTP
// 400 for a header).
var ErrPriority = errors.New("auth: unknown priority band")

// Priority is a request's priority band. Bands are strictly ordered: a
// cell's flow controller serves every queued request of a higher band
// before any of a lower one, and sheds the lowest band first. The zero
// value is PriorityStandard, so a tenant (or a request) that names no band
// is standard; a larger value is more important.
type Priority int8

// The priority bands, least important first.
const (
	// PrioritySheddable is work that may be refused first when the fleet
	// is saturated (batch jobs, speculative prefetches).
	PrioritySheddable Priority = -1
	// PriorityStandard is the default band.
	PriorityStandard Priority = 0
	// PriorityCritical is work that is never shed while a request of a
	// lower band is queued.
	PriorityCritical Priority = 1
)

// NumPriorities is the number of bands; Priority.Index numbers them 0 (the
// least important) to NumPriorities-1.
const NumPriorities = 3

// Priorities lists the bands, least important first (Index order).
func Priorities() [NumPriorities]Priority {
	return [NumPriorities]Priority{PrioritySheddable, PriorityStandard, PriorityCritical}
}

// Valid reports whether p is one of the bands.
func (p Priority) Valid() bool { return p >= PrioritySheddable && p <= PriorityCritical }

// Index numbers the band from 0 (sheddable) to NumPriorities-1
// (critical), for arrays indexed by band. It panics on an invalid band.
func (p Priority) Index() int {
	if !p.Valid() {
		panic(fmt.Sprintf("auth: Priority(%d).Index: not a band", int8(p)))
	}
	return int(p - PrioritySheddable)
}

// String returns the band's name as the key file and the header spell it.
func (p Priority) String() string {
	switch p {
	case PrioritySheddable:
		return "sheddable"
	case PriorityStandard:
		return "standard"
	case PriorityCritical:
		return "critical"
	}
	return fmt.Sprintf("Priority(%d)", int8(p))
}

// ParsePriority parses a band's name, in any case, with surrounding spaces
// ignored. Anything else is an error wrapping ErrPriority.
func ParsePriority(s string) (Priority, error) {
	t := strings.TrimSpace(s)
	for _, p := range Priorities() {
		if strings.EqualFold(t, p.String()) {
			return p, nil
		}
	}
	if len(t) > 32 {
		t = t[:32] + "..."
	}
	return PriorityStandard, fmt.Errorf("%w %q: want sheddable, standard or critical", ErrPriority, t)
}

// RequestPriority returns the band of a request whose PriorityHeader value
// is header ("" when it sent none):
//
//   - a key's request takes its tenant's band, or the header's when that
//     is lower: a key may lower its requests, never raise them;
//   - a peer of the tier (globald, which set the header to the band it
//     decided where the request entered) is trusted for the header; without
//     one, its tenant's band;
//   - without a tenant (authentication off) the header is taken as sent,
//     standard without one.
//
// A header that names no band is an *Error wrapping ErrPriority.
func (p Principal) RequestPriority(header string) (Priority, error) {
	ceiling, def := PriorityCritical, PriorityStandard
	if p.Tenant != nil {
		def = p.Tenant.Priority
		if !p.Peer {
			ceiling = def
		}
	}
	if header == "" {
		return def, nil
	}
	band, err := ParsePriority(header)
	if err != nil {
		return def, &Error{Err: ErrPriority, Tenant: p.TenantName(), KeyID: p.KeyID, Detail: "header " + PriorityHeader + ": " + strings.TrimPrefix(err.Error(), ErrPriority.Error()+" ")}
	}
	return min(band, ceiling), nil
}
