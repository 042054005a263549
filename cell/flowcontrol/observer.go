package flowcontrol

import (
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// Outcomes of a queued request, for Observer.Left.
const (
	// OutcomeDispatched: the request left the queue to be re-picked and
	// sent.
	OutcomeDispatched = "dispatched"
	// OutcomeDeadline: it waited its whole deadline (429).
	OutcomeDeadline = "deadline"
	// OutcomeClientDeadline: it waited as long as its client said it
	// would (TimeoutHeader or its context's deadline), which was shorter
	// than the cell's and its tenant's bounds (429).
	OutcomeClientDeadline = "client_deadline"
	// OutcomeShed: a request of a higher band took its place in a full
	// queue (429).
	OutcomeShed = "shed"
	// OutcomeRefused: the queue was full of requests of its band or
	// higher, so it was refused on arrival (429).
	OutcomeRefused = "queue_full"
	// OutcomeCancelled: its client went away.
	OutcomeCancelled = "cancelled"
	// OutcomeClosed: the controller stopped (503).
	OutcomeClosed = "closed"
)

// Observer is told what the controller does, for metrics; the core
// imports no metrics library. Calls are made under the controller's lock,
// so they must be quick and must not call the controller; tenant is ""
// for a request without one.
type Observer interface {
	// Queued is called when a request of tenant in band joins the queue
	// (delta 1) or leaves it (delta -1).
	Queued(tenant string, band auth.Priority, delta int)
	// Left is called once per request that was queued or refused, with how
	// long it waited and how it left (one of the Outcome constants).
	Left(tenant string, band auth.Priority, waited time.Duration, outcome string)
	// Served is called when a request ends with the tokens it was served
	// (prompt and output) and its tenant's weight.
	Served(tenant string, band auth.Priority, tokens, weight float64)
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) Queued(string, auth.Priority, int)                 {}
func (nopObserver) Left(string, auth.Priority, time.Duration, string) {}
func (nopObserver) Served(string, auth.Priority, float64, float64)    {}

// Stats are the controller's counts since it started.
type Stats struct {
	// Queued is the requests waiting now, by band (auth.Priority.Index).
	Queued [auth.NumPriorities]int
	// Left counts the requests that left the queue (or were refused), by
	// band and outcome.
	Left [auth.NumPriorities]map[string]int
	// Admitted counts the requests admitted without waiting, by band.
	Admitted [auth.NumPriorities]int
	// CriticalShedWhileSheddableQueued counts critical requests refused
	// (deadline, full queue) while a sheddable request was queued: the
	// design keeps it at zero.
	CriticalShedWhileSheddableQueued int
	// HeadroomKept counts the requests that, on arrival, had to leave the
	// pods' headroom free for others (Config.Headroom): over their share,
	// with their pick's room only in the headroom, so they went to another
	// pod or waited.
	HeadroomKept int
	// AffinityReordered counts the requests dispatched ahead of an
	// earlier one of their tenant and band, because the pod with room
	// cost them less prefix (Config.AffinityLookahead).
	AffinityReordered int
	// ServedTokens is the tokens served by tenant (all bands).
	ServedTokens map[string]float64
}
