package gossip

import "sync"

// EventKind says what happened to a member.
type EventKind uint8

// The event kinds.
const (
	// EventJoin: a member joined (or this node learned of it).
	EventJoin EventKind = iota + 1
	// EventLeave: a member left cleanly or was declared dead.
	EventLeave
	// EventUpdate: a member's metadata changed.
	EventUpdate
)

// String returns "join", "leave" or "update".
func (k EventKind) String() string {
	switch k {
	case EventJoin:
		return "join"
	case EventLeave:
		return "leave"
	case EventUpdate:
		return "update"
	}
	return "event(?)"
}

// Event is one membership change.
type Event struct {
	Kind   EventKind
	Member Member
}

// Observer receives membership changes. OnChange is called from one
// goroutine owned by the Node, in order, never concurrently with itself;
// it may call the Node's methods, and should return promptly (events queue
// up behind a slow observer).
type Observer interface {
	OnChange(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// OnChange calls f(e).
func (f ObserverFunc) OnChange(e Event) { f(e) }

// eventQueue is an unbounded FIFO drained by one goroutine, so memberlist's
// callbacks (which run under its locks) never block on an observer.
type eventQueue struct {
	mu  sync.Mutex
	q   []Event
	sig chan struct{}
}

func newEventQueue() *eventQueue { return &eventQueue{sig: make(chan struct{}, 1)} }

func (q *eventQueue) push(e Event) {
	q.mu.Lock()
	q.q = append(q.q, e)
	q.mu.Unlock()
	select {
	case q.sig <- struct{}{}:
	default:
	}
}

// run delivers events to obs until stop closes.
func (q *eventQueue) run(obs Observer, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-q.sig:
		}
		q.mu.Lock()
		batch := q.q
		q.q = nil
		q.mu.Unlock()
		for _, e := range batch {
			if obs != nil {
				obs.OnChange(e)
			}
		}
	}
}
