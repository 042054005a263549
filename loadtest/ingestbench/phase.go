package ingestbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/zmqsub"
	"github.com/cellrouter/cellrouter/cell/index"
)

// quiet discards the sockets' log lines.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rig is one run's cell side and engines: an index, its applier behind a
// recorder, a Subscriber, and one publisher per pod.
type rig struct {
	ix     *index.Index
	app    *events.Applier
	rec    *recorder
	sub    *zmqsub.Subscriber
	pubs   []*vllmpub.Publisher
	cancel context.CancelFunc
	runErr chan error
}

// newRig starts the publishers and the Subscriber and waits until every
// publisher sees the subscription.
func newRig(ctx context.Context, cfg Config, w *Workload) (_ *rig, err error) {
	r := &rig{runErr: make(chan error, 1)}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.ix, err = index.New(index.DefaultConfig()); err != nil {
		return r, fmt.Errorf("ingestbench: %w", err)
	}
	ecfg := events.DefaultConfig()
	ecfg.BlockSize = cfg.RouterBlockSize
	if r.app, err = events.NewApplier(ecfg, r.ix, nil, nil); err != nil {
		return r, fmt.Errorf("ingestbench: %w", err)
	}
	r.rec = newRecorder(r.app, w, time.Now())
	scfg := zmqsub.DefaultConfig()
	scfg.Logger = quiet
	for _, ps := range w.Pods {
		pcfg := vllmpub.DefaultConfig(ps.ID, cfg.Model)
		pcfg.Form = cfg.Form
		pcfg.Logger = quiet
		p, err := vllmpub.New(pcfg)
		if err != nil {
			return r, fmt.Errorf("ingestbench: publisher %s: %w", ps.ID, err)
		}
		r.pubs = append(r.pubs, p)
		scfg.Endpoints = append(scfg.Endpoints, zmqsub.Endpoint{Pub: p.Endpoint(), Replay: p.ReplayEndpoint(), Pod: ps.ID, Model: cfg.Model})
	}
	if r.sub, err = zmqsub.New(scfg, r.rec); err != nil {
		return r, fmt.Errorf("ingestbench: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	go func() { r.runErr <- r.sub.Run(sctx) }()
	deadline := time.Now().Add(30 * time.Second)
	select {
	case <-r.sub.Ready():
	case <-time.After(time.Until(deadline)):
		return r, errors.New("ingestbench: subscriber not ready after 30s")
	}
	for _, p := range r.pubs {
		for !p.Subscribed() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return r, fmt.Errorf("ingestbench: publisher %s never saw the subscription", p.Topic())
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return r, nil
}

// close stops the Subscriber and the publishers and closes the index.
func (r *rig) close() {
	if r.cancel != nil {
		r.cancel()
		<-r.runErr
		r.cancel = nil
	}
	for _, p := range r.pubs {
		p.Close()
	}
	r.pubs = nil
	if r.ix != nil {
		r.ix.Close()
		r.ix = nil
	}
}

// publish sends every pod's payloads, one goroutine per pod, back to back
// when rate is 0 and otherwise paced so that the pods together offer rate
// block events per second (each pod in proportion to its share). It
// returns when everything was handed to the sockets, with the start time
// and, per pod and batch, the time each was handed over in ns since the
// recorder's base.
func (r *rig) publish(w *Workload, rate float64) (start time.Time, stamps [][]int64, err error) {
	var total int64
	for _, ps := range w.Pods {
		total += ps.TotalBlocks
	}
	stamps = make([][]int64, len(w.Pods))
	errs := make([]error, len(w.Pods))
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for p := range w.Pods {
		stamps[p] = make([]int64, len(w.Pods[p].Payloads))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-begin
			errs[p] = r.publishPod(p, &w.Pods[p], rate*float64(w.Pods[p].TotalBlocks)/float64(max(total, 1)), start, stamps[p])
		}()
	}
	start = time.Now()
	close(begin)
	wg.Wait()
	return start, stamps, errors.Join(errs...)
}

// publishPod publishes pod p's payloads at rate block events per second (0:
// at full speed) from start, and stamps each.
func (r *rig) publishPod(p int, ps *PodStream, rate float64, start time.Time, stamps []int64) error {
	pub := r.pubs[p]
	base := r.rec.base
	if rate <= 0 {
		_, ts, err := pub.PublishPayloads(ps.Payloads, nil)
		for i, t := range ts {
			stamps[i] = t.Sub(base).Nanoseconds()
		}
		return err
	}
	var cum float64
	for i, pl := range ps.Payloads {
		due := start.Add(time.Duration(cum / rate * 1e9))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if _, err := pub.PublishPayload(pl); err != nil {
			return err
		}
		stamps[i] = time.Since(base).Nanoseconds()
		cum += float64(ps.Blocks[i])
	}
	return nil
}

// wait polls until every batch of w was applied, timeout passes or ctx ends.
func (r *rig) wait(ctx context.Context, w *Workload, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for r.rec.applied.Load() < w.Batches {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ingestbench: %d of %d batches applied after %v", r.rec.applied.Load(), w.Batches, timeout)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}
