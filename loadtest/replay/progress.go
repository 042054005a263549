package replay

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Progress is an Observer that draws a one-line progress bar: requests
// done out of the total, errors, requests in flight and the completion rate
// over the last second or so. Start it, run the replay, then Stop it.
type Progress struct {
	w     io.Writer
	total int
	every time.Duration

	sent, done, errs atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup
	// lastDone and lastAt are the previous tick's count and time (owned by
	// the drawing goroutine).
	lastDone int64
	lastAt   time.Time
	started  time.Time
}

// NewProgress returns a progress bar for total requests that redraws on w
// every interval.
func NewProgress(w io.Writer, total int, every time.Duration) *Progress {
	return &Progress{w: w, total: total, every: every, stop: make(chan struct{})}
}

// Sent implements Observer.
func (p *Progress) Sent(int) { p.sent.Add(1) }

// Done implements Observer.
func (p *Progress) Done(r *Result) {
	p.done.Add(1)
	if !r.OK() {
		p.errs.Add(1)
	}
}

// Start begins redrawing.
func (p *Progress) Start() {
	p.started = time.Now()
	p.lastAt = p.started
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.draw(false)
			case <-p.stop:
				p.draw(true)
				return
			}
		}
	}()
}

// Stop draws the final state, ends the line and waits for the drawing
// goroutine.
func (p *Progress) Stop() {
	close(p.stop)
	p.wg.Wait()
}

// draw writes the bar; final ends it with a newline.
func (p *Progress) draw(final bool) {
	now := time.Now()
	done, errs, sent := p.done.Load(), p.errs.Load(), p.sent.Load()
	rate := 0.0
	if dt := now.Sub(p.lastAt).Seconds(); dt > 0 {
		rate = float64(done-p.lastDone) / dt
	}
	if final {
		if el := now.Sub(p.started).Seconds(); el > 0 {
			rate = float64(done) / el
		}
	}
	p.lastDone, p.lastAt = done, now
	fmt.Fprintf(p.w, "\r%s", progressLine(done, errs, sent-done, int64(p.total), rate, now.Sub(p.started)))
	if final {
		fmt.Fprintln(p.w)
	}
}

// progressLine renders one state of the bar.
func progressLine(done, errs, inflight, total int64, rate float64, elapsed time.Duration) string {
	const width = 30
	filled := 0
	if total > 0 {
		filled = int(done * width / total)
	}
	bar := strings.Repeat("#", filled) + strings.Repeat("-", width-filled)
	return fmt.Sprintf("[%s] %d/%d done, %d errors, %d in flight, %.1f req/s, %s   ",
		bar, done, total, errs, inflight, rate, elapsed.Truncate(time.Second))
}
