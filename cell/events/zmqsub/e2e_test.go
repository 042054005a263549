package zmqsub

import (
	"fmt"
	"sync"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

const (
	testPod   = "10.0.0.7:8000"
	testModel = "meta-llama/Llama-3.1-8B"
)

// replayBook maps pods to replay sockets for bind-mode tests, where the
// publisher's replay port is only known after the subscriber is up.
type replayBook struct {
	mu sync.Mutex
	m  map[string]string
}

func (r *replayBook) set(pod, ep string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]string{}
	}
	r.m[pod] = ep
}

func (r *replayBook) get(pod string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[pod]
}

// rig is one publisher feeding one subscribing cell, in dial or bind mode.
type rig struct {
	t    testing.TB
	bind bool
	pcfg vllmpub.Config
	pub  *vllmpub.Publisher
	sub  *Subscriber
	got  *cell
	book *replayBook
	stop func()
	scfg Config
}

// newRig starts a publisher and a subscriber. In dial mode the publisher
// binds and the subscriber dials it; in bind mode the subscriber binds and
// the publisher connects. mod adjusts the publisher's config.
func newRig(t testing.TB, bind bool, form vllmwire.Form, mod func(*vllmpub.Config), smod func(*Config)) *rig {
	t.Helper()
	r := &rig{t: t, bind: bind, book: &replayBook{}, got: newCell(t)}
	r.pcfg = vllmpub.DefaultConfig(testPod, testModel)
	r.pcfg.Form = form
	if mod != nil {
		mod(&r.pcfg)
	}
	r.scfg = testConfig()
	if smod != nil {
		smod(&r.scfg)
	}
	if bind {
		r.scfg.Bind = "tcp://127.0.0.1:0"
		r.scfg.ResolveReplay = r.book.get
		r.startSub()
		r.pcfg.Connect = true
		r.pcfg.Endpoint = r.sub.BindEndpoint()
		r.startPub()
	} else {
		r.startPub()
		// Later restarts reuse the ports the OS chose.
		r.pcfg.Endpoint = r.pub.Endpoint()
		if r.pcfg.ReplayEndpoint != "" {
			r.pcfg.ReplayEndpoint = r.pub.ReplayEndpoint()
		}
		r.scfg.Endpoints = []Endpoint{{Pub: r.pub.Endpoint(), Replay: r.pub.ReplayEndpoint()}}
		r.startSub()
	}
	r.waitSubscribed()
	return r
}

// startSub starts a new subscriber (a fresh cell keeps r.got unless the
// caller replaced it).
func (r *rig) startSub() {
	s, err := New(r.scfg, r.got.a)
	if err != nil {
		r.t.Fatal(err)
	}
	r.sub = s
	r.stop = runSubscriber(r.t, s)
}

// restartInto starts a new subscriber feeding got, after the previous one
// stopped: in bind mode on the same address, so that the engine's socket
// reconnects to it; eager names the dialed pod in the config, so that the
// subscriber catches it up at connection. A bind port still held by the
// stopped subscriber is retried.
func (r *rig) restartInto(got *cell, eager bool) {
	r.got = got
	if r.bind {
		r.scfg.Bind = r.sub.BindEndpoint()
	} else if eager {
		r.scfg.Endpoints[0].Pod, r.scfg.Endpoints[0].Model = testPod, testModel
	}
	r.stop = retry(r.t, func() (func(), error) {
		s, err := New(r.scfg, r.got.a)
		if err != nil {
			return nil, err
		}
		stop, err := tryRunSubscriber(r.t, s)
		if err == nil {
			r.sub = s
		}
		return stop, err
	})
}

// startPub starts a publisher with r.pcfg.
func (r *rig) startPub() {
	r.pub = startPublisher(r.t, r.pcfg)
	if r.bind {
		r.book.set(testPod, r.pub.ReplayEndpoint())
	}
}

// waitUnsubscribed waits until the publisher saw a stopped subscriber go
// (dial mode): until then its old subscription can make waitSubscribed pass
// before the new subscriber connected, and messages published meanwhile
// are dropped by the PUB socket.
func (r *rig) waitUnsubscribed() {
	waitFor(r.t, func() string { return "publisher kept the stopped subscriber's subscription" },
		func() bool { return !r.pub.Subscribed() })
}

// waitSubscribed waits until the publisher would deliver to the subscriber.
func (r *rig) waitSubscribed() {
	waitFor(r.t, func() string { return "publisher never saw the subscription" }, r.pub.Subscribed)
}

func (r *rig) String() string {
	c := r.sub.Counters()
	return fmt.Sprintf("messages %d decode errors %d replays %d/%d/%d replayed %d giveups %d restarts %d",
		c.Messages.Load(), c.DecodeErrorsTotal(), c.ReplaysRequested.Load(), c.ReplaysSucceeded.Load(),
		c.ReplaysFailed.Load(), c.BatchesReplayed.Load(), c.GiveUps.Load(), c.Restarts.Load())
}

// modes are the transport modes and event forms every scenario runs in.
var modes = []struct {
	name string
	bind bool
	form vllmwire.Form
}{
	{"dial/array", false, vllmwire.FormArray},
	{"dial/map", false, vllmwire.FormMap | vllmwire.FormTrimNils},
	{"bind/array", true, vllmwire.FormArray | vllmwire.FormOmitRank},
	{"bind/map", true, vllmwire.FormMap},
}

func TestEndToEnd(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := newRig(t, m.bind, m.form, nil, nil)
			ref := newCell(t)
			publishAll(t, r.pub, ref, testPod, testModel, newWorkload(1, 16).batches(300))
			waitEqual(t, r.got, ref)
			c := r.sub.Counters()
			if got := c.DecodeErrorsTotal(); got != 0 {
				t.Errorf("got %d decode errors, want 0 (%s)", got, r)
			}
			if got := c.GiveUps.Load(); got != 0 {
				t.Errorf("got %d give-ups, want 0 (%s)", got, r)
			}
		})
	}
}

func TestDroppedMessagesAreReplayed(t *testing.T) {
	drop := map[uint64]bool{5: true, 6: true, 7: true, 50: true, 120: true, 121: true, 122: true, 123: true, 200: true}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := newRig(t, m.bind, m.form, func(c *vllmpub.Config) { c.Skip = func(seq uint64) bool { return drop[seq] } }, nil)
			ref := newCell(t)
			publishAll(t, r.pub, ref, testPod, testModel, newWorkload(2, 16).batches(250))
			waitEqual(t, r.got, ref)
			c := r.sub.Counters()
			// One replay may also bring later skipped batches (those published
			// meanwhile), so there is at least one replay, not one per gap; but
			// every skipped batch can only have come through a replay.
			// The index can be complete a moment before the replay's end
			// marker is read and counted: wait for the counters.
			waitFor(t, func() string {
				return fmt.Sprintf("got %d successful replays and %d batches replayed, want at least 1 and %d (%s)",
					c.ReplaysSucceeded.Load(), c.BatchesReplayed.Load(), len(drop), r)
			}, func() bool { return c.ReplaysSucceeded.Load() >= 1 && c.BatchesReplayed.Load() >= uint64(len(drop)) })
			if got, want := r.pub.Counters().Skipped.Load(), uint64(len(drop)); got != want {
				t.Errorf("publisher skipped %d batches, want %d", got, want)
			}
			if got := c.GiveUps.Load(); got != 0 {
				t.Errorf("got %d give-ups, want 0 (%s)", got, r)
			}
			if got := r.got.a.Counters().Gaps.Load(); got < 1 {
				t.Errorf("applier saw %d gaps, want at least 1", got)
			}
		})
	}
}

func TestGapWithoutReplayIsGivenUp(t *testing.T) {
	r := newRig(t, false, vllmwire.FormArray, func(c *vllmpub.Config) {
		c.ReplayEndpoint = ""
		c.Skip = func(seq uint64) bool { return seq == 10 }
	}, nil)
	ws := newWorkload(3, 16).batches(40)
	for _, b := range ws {
		if _, err := r.pub.Publish(b); err != nil {
			t.Fatal(err)
		}
	}
	// Every batch but the skipped one arrives; the gap is given up at batch
	// 11, which becomes the new baseline, and the rest apply after it.
	waitFor(t, r.String, func() bool { return r.got.a.Counters().Batches.Load() == 39 })
	c := r.sub.Counters()
	if got := c.GiveUps.Load(); got != 1 {
		t.Errorf("got %d give-ups, want 1 (%s)", got, r)
	}
	if got := r.got.a.Counters().GiveUps.Load(); got != 1 {
		t.Errorf("applier counted %d give-ups, want 1", got)
	}
	if got := c.ReplaysRequested.Load(); got != 0 {
		t.Errorf("got %d replays requested without a replay socket, want 0", got)
	}
}
