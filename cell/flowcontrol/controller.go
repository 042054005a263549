package flowcontrol

import (
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// Controller is a cell's flow control: the Queue behind a lock, the
// requests waiting on it, and the estimate of how long a new request
// would wait. It is safe for concurrent use.
type Controller struct {
	cfg Config

	mu sync.Mutex
	q  *Queue
	// interval is a moving average of the time between dispatches from
	// the queue while requests wait (WaitEstimate).
	interval     time.Duration
	lastDispatch time.Time
}

// New returns a controller for cfg (which must be valid).
func New(cfg Config) *Controller {
	return &Controller{cfg: cfg, q: NewQueue()}
}

// Config returns the controller's configuration.
func (c *Controller) Config() Config { return c.cfg }

// WaitEstimate returns how long a new request of band would wait now:
// the requests queued at its band or above times the recent interval
// between dispatches; 0 when none waits (or flow control is off).
func (c *Controller) WaitEstimate(band auth.Priority) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	ahead := c.q.AtOrAbove(band)
	if ahead == 0 || !c.cfg.Enabled {
		return 0
	}
	iv := c.interval
	if iv <= 0 {
		iv = c.cfg.RecheckInterval
	}
	return min(time.Duration(ahead+1)*iv, c.cfg.DefaultDeadline)
}
