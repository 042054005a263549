package cell

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell/discovery"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/zmqsub"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/podset"
)

// PodSetVersionHeader is sent with every request the cell forwards to a
// pod: the version of the live pod set in which the pod was routable when
// the request left (tests check with it that no request leaves for a pod
// after the cell saw it turn not Ready or go).
const PodSetVersionHeader = "X-Cellrouter-Pod-Set"

// PodSet returns the cell's live pod set (for tests and tools).
func (c *Cell) PodSet() *podset.Set { return c.pods }

// discoverySync is the discovery transport: it runs the Kubernetes source,
// which publishes into the cell's pod set, and applies each change of the
// set to the parts that hold pods (package podset describes the model):
//
//   - a pod new to the set is registered (with its address and role), and
//     dialed with replay once it is routable;
//   - a pod that turns not routable keeps its subscription and its index
//     entries; the router and the proxy stop sending it new requests as
//     soon as the set changes, before this loop even runs;
//   - a removed pod's subscription stops (Run waits for it), then its index
//     holders are killed (the index's two-phase removal) and the registry
//     forgets it;
//   - a replaced pod (same name, new IP) is removed, then added afresh.
//
// Static pods are the static ZMQ transport's and are left alone here.
type discoverySync struct {
	c     *Cell
	src   *discovery.Source
	ready chan struct{}

	// Owned by Run's goroutine.
	last    *podset.Snapshot
	dialers map[string]*podDialer

	mu      sync.Mutex // guards retired and the dialers' count for metrics
	retired zmqsub.Counters
	live    map[*zmqsub.Subscriber]struct{}
}

// podDialer is the subscription of one discovered pod: a Subscriber of its
// own, stopped with the pod.
type podDialer struct {
	sub    *zmqsub.Subscriber
	cancel context.CancelFunc
	done   chan struct{}
}

// buildDiscovery builds the discovery transport when discovery is on.
func (c *Cell) buildDiscovery() error {
	kc := c.cfg.Discovery.Kubernetes
	if !kc.Enabled {
		return nil
	}
	if kc.DefaultModel == "" {
		kc.DefaultModel = c.cfg.Events.DefaultModel
	}
	d := &discoverySync{c: c, ready: make(chan struct{}), dialers: map[string]*podDialer{}, live: map[*zmqsub.Subscriber]struct{}{}}
	src, err := discovery.New(kc, c.cfg.discoveryCapacity(), func(r discovery.Result) {
		c.pods.Publish(podset.SourceKubernetes, r.Pods, r.Refused)
	}, c.log)
	if err != nil {
		return err
	}
	d.src = src
	c.disc = d
	c.transports = append(c.transports, d)
	c.metrics = append(c.metrics, d.collect(c.cfg.CellID))
	return nil
}

// heldPods are the pods the cell holds now, static and discovered, as
// configured pods (for the health checks).
func (c *Cell) heldPods() []PodConfig {
	snap := c.pods.Load()
	out := make([]PodConfig, len(snap.Pods))
	for i, p := range snap.Pods {
		out[i] = configOf(p)
	}
	return out
}

// Name is the transport's name in readiness and logs.
func (d *discoverySync) Name() string { return "kubernetes" }

// Ready is closed once the informers listed everything and the cell holds
// the first pod set.
func (d *discoverySync) Ready() <-chan struct{} { return d.ready }

// Run runs the source and applies the pod set's changes until ctx ends;
// it then stops every subscription it started and returns.
func (d *discoverySync) Run(ctx context.Context) error {
	changes, cancel := d.c.pods.Subscribe()
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); errc <- d.src.Run(ctx) }()
	defer func() {
		wg.Wait()
		d.stopAll()
	}()
	synced := d.src.Synced()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if err != nil {
				return err
			}
			errc = nil
		case <-synced:
			synced = nil
			d.apply(ctx, d.c.pods.Load())
			close(d.ready)
		case <-changes:
			d.apply(ctx, d.c.pods.Load())
		}
	}
}

// apply brings the registry, the index and the subscriptions from the last
// snapshot handled to snap.
func (d *discoverySync) apply(ctx context.Context, snap *podset.Snapshot) {
	if d.last != nil && snap.Version <= d.last.Version {
		return
	}
	ch := podset.Diff(d.last, snap)
	d.logRefusals(snap)
	d.last = snap
	now := time.Now()
	var gone []podset.Pod
	for _, p := range ch.Removed {
		if p.Source != podset.SourceStatic {
			gone = append(gone, p)
		}
	}
	for _, r := range ch.Replaced {
		if r.Old.Source != podset.SourceStatic {
			gone = append(gone, r.Old)
		}
	}
	d.remove(gone)
	for _, r := range ch.Replaced {
		if r.New.Source != podset.SourceStatic {
			d.c.log.Info("discovery: pod replaced: its old entries are cleared", "pod", r.New.ID, "old", r.Old.Address, "new", r.New.Address)
		}
	}
	hold := append(append([]podset.Pod(nil), ch.Added...), ch.Updated...)
	for _, r := range ch.Replaced {
		hold = append(hold, r.New)
	}
	for _, p := range hold {
		if p.Source == podset.SourceStatic {
			continue
		}
		d.c.reg.Manage(events.PodSpec{ID: p.ID, Address: p.Address, Role: events.Role(p.Role), Model: p.Model}, now)
		if p.Routable && d.dialers[p.ID] == nil {
			d.dial(ctx, p)
		}
	}
}

// remove stops the pods' subscriptions (all at once, then waits), kills
// their index holders and learned slot, and forgets them.
func (d *discoverySync) remove(pods []podset.Pod) {
	var stopping []*podDialer
	for _, p := range pods {
		if pd := d.dialers[p.ID]; pd != nil {
			pd.cancel()
			stopping = append(stopping, pd)
			delete(d.dialers, p.ID)
		}
	}
	for _, pd := range stopping {
		d.retire(pd)
	}
	for _, p := range pods {
		d.c.applier.Kill(p.ID)
		d.c.learned.drop(p.ID)
		d.c.reg.Forget(p.ID)
	}
}

// dial starts the subscription of a discovered pod that publishes events.
func (d *discoverySync) dial(ctx context.Context, p podset.Pod) {
	pc := configOf(p)
	if pc.ZMQEndpoint == "" || d.c.cfg.podEvents(pc) == PodEventsNone {
		return
	}
	z := zmqsub.DefaultConfig()
	z.TopicPrefix = d.c.cfg.ZMQ.TopicPrefix
	z.QueueDepth = d.c.cfg.ZMQ.QueueDepth
	z.ReplayTimeout = d.c.cfg.ZMQ.ReplayTimeout
	z.Endpoints = podEndpoints(pc)
	z.Logger = d.c.log.With("transport", "zmq", "pod", p.ID)
	sub, err := zmqsub.New(z, d.c.applier)
	if err != nil {
		d.c.log.Error("discovery: cannot subscribe to a pod's events; it is routed to without them", "pod", p.ID, "err", err)
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	pd := &podDialer{sub: sub, cancel: cancel, done: make(chan struct{})}
	d.mu.Lock()
	d.live[sub] = struct{}{}
	d.mu.Unlock()
	go func() {
		defer close(pd.done)
		if err := sub.Run(pctx); err != nil {
			d.c.log.Error("discovery: a pod's subscription failed", "pod", p.ID, "err", err)
		}
	}()
	d.dialers[p.ID] = pd
}

// retire waits for a cancelled subscription and keeps its counters.
func (d *discoverySync) retire(pd *podDialer) {
	<-pd.done
	d.mu.Lock()
	delete(d.live, pd.sub)
	addZMQCounters(&d.retired, pd.sub.Counters())
	d.mu.Unlock()
}

// stopAll stops every subscription (Run is ending).
func (d *discoverySync) stopAll() {
	for id, pd := range d.dialers {
		pd.cancel()
		d.retire(pd)
		delete(d.dialers, id)
	}
}

// logRefusals logs, as errors, the pods newly refused: the cell is at its
// holder cap, or a discovered pod has a static pod's id.
func (d *discoverySync) logRefusals(snap *podset.Snapshot) {
	var before []podset.Refusal
	if d.last != nil {
		before = d.last.Refused
	}
	for _, r := range snap.Refused {
		if slices.Contains(before, r) {
			continue
		}
		switch r.Reason {
		case podset.ReasonCap:
			d.c.log.Error(fmt.Sprintf("discovery: pod refused: the cell holds at most %d index holders (one per pod, or per data-parallel rank); split the fleet across cells", index.MaxPods),
				"pod", r.ID, "source", r.Source, "refused", len(snap.Refused))
		default:
			d.c.log.Error("discovery: pod refused: a static pod has its id", "pod", r.ID, "source", r.Source)
		}
	}
}

// podEndpoints are the ZMQ endpoints of a pod with a zmq_endpoint: one per
// data-parallel rank, on the ports plus the rank.
func podEndpoints(p PodConfig) []zmqsub.Endpoint {
	ranks := max(1, p.DataParallelSize)
	out := make([]zmqsub.Endpoint, 0, ranks)
	for r := 0; r < ranks; r++ {
		ep := zmqsub.Endpoint{Pub: zmqsub.OffsetPort(p.ZMQEndpoint, r), Pod: p.ID, Model: p.Model}
		if p.ReplayEndpoint != "" {
			ep.Replay = zmqsub.OffsetPort(p.ReplayEndpoint, r)
		}
		if ranks > 1 {
			ep.Rank, ep.HasRank = r, true
		}
		out = append(out, ep)
	}
	return out
}
