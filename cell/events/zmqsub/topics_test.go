package zmqsub

import (
	"fmt"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

func topicPtr(s string) *string { return &s }

// dialPublisher starts a binding publisher on free ports, with mod applied
// to its config.
func dialPublisher(t *testing.T, mod func(*vllmpub.Config)) *vllmpub.Publisher {
	t.Helper()
	cfg := vllmpub.DefaultConfig(testPod, testModel)
	if mod != nil {
		mod(&cfg)
	}
	return startPublisher(t, cfg)
}

// TestDialTakesPodFromEndpoint publishes on topics that do not name the
// configured pod (vLLM's default empty topic, a custom topic, a topic
// naming the engine's address): in dial mode every message belongs to the
// endpoint's pod, under its model or, when the endpoint has none, the
// model a kv@<pod>@<model> topic names.
func TestDialTakesPodFromEndpoint(t *testing.T) {
	cases := []struct {
		name      string
		topic     string
		epModel   string
		wantModel string
	}{
		{"vLLM default empty topic", "", "served", "served"},
		{"custom topic", "kv-events", "served", "served"},
		{"topic naming another address", "kv@10.9.9.9:8000@engine-model", "served", "served"},
		{"model from the topic when the endpoint has none", "kv@10.9.9.9:8000@engine-model", "", "engine-model"},
		{"no model anywhere", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pub := dialPublisher(t, func(c *vllmpub.Config) { c.Topic = topicPtr(tc.topic) })
			got, ref := newCell(t), newCell(t)
			cfg := testConfig()
			cfg.Endpoints = []Endpoint{{Pub: pub.Endpoint(), Replay: pub.ReplayEndpoint(), Pod: "pod-0", Model: tc.epModel}}
			s, err := New(cfg, got.a)
			if err != nil {
				t.Fatal(err)
			}
			runSubscriber(t, s)
			waitFor(t, func() string { return "publisher never saw the subscription" }, pub.Subscribed)
			publishAll(t, pub, ref, "pod-0", tc.wantModel, newWorkload(11, 16).batches(40))
			waitEqual(t, got, ref)
			if n := s.Counters().DecodeErrorsTotal(); n != 0 {
				t.Errorf("got %d dropped messages, want 0", n)
			}
		})
	}
}

// TestDialCatchUpUsesTopicModel starts the cell after the engine published:
// the batches it missed come back through the replay socket, which carries
// no topic. The cell catches up at connection under no model (the
// endpoint names none); the live topic then names the model, and the
// buffer must be filed again under it, or its blocks would never match and
// their live copies would be dropped as duplicates.
func TestDialCatchUpUsesTopicModel(t *testing.T) {
	pub := dialPublisher(t, nil) // topic kv@<testPod>@<testModel>
	ref := newCell(t)
	w := newWorkload(12, 16)
	publishAll(t, pub, ref, "pod-0", testModel, w.batches(30)) // nobody listens yet

	got := newCell(t)
	cfg := testConfig()
	cfg.Endpoints = []Endpoint{{Pub: pub.Endpoint(), Replay: pub.ReplayEndpoint(), Pod: "pod-0"}}
	s, err := New(cfg, got.a)
	if err != nil {
		t.Fatal(err)
	}
	runSubscriber(t, s)
	waitFor(t, func() string { return "publisher never saw the subscription" }, pub.Subscribed)
	publishAll(t, pub, ref, "pod-0", testModel, w.batches(10))
	waitEqual(t, got, ref)
	// Caught up at connection under no model, then again under the
	// topic's once the first live message named it.
	if n := s.Counters().ModelChanges.Load(); n != 1 {
		t.Errorf("got %d model changes, want 1", n)
	}
}

// TestDialStampsRank checks that batches without a data-parallel rank
// (older engines) take the rank of the socket they came from, so that the
// ranks of one pod, dialed on port+r, are distinct holders.
func TestDialStampsRank(t *testing.T) {
	pub := dialPublisher(t, func(c *vllmpub.Config) { c.Form = vllmwire.FormArray | vllmwire.FormOmitRank })
	got, ref := newCell(t), newCell(t)
	cfg := testConfig()
	cfg.Endpoints = []Endpoint{{Pub: pub.Endpoint(), Replay: pub.ReplayEndpoint(), Pod: "pod-0", Model: testModel, Rank: 2, HasRank: true}}
	s, err := New(cfg, got.a)
	if err != nil {
		t.Fatal(err)
	}
	runSubscriber(t, s)
	waitFor(t, func() string { return "publisher never saw the subscription" }, pub.Subscribed)
	for _, b := range newWorkload(13, 16).batches(20) {
		seq, err := pub.Publish(b)
		if err != nil {
			t.Fatal(err)
		}
		rb := *b
		rb.Pod, rb.Model, rb.Seq, rb.DPRank = "pod-0", testModel, seq, 2
		ref.apply(t, &rb)
	}
	waitEqual(t, got, ref)
	if _, ok := got.ix.SlotOf("pod-0#2"); !ok {
		t.Errorf("no holder pod-0#2 in the index")
	}
}

// TestBindTopicPrefix checks how the Bind socket reads pods from topics:
// with an empty prefix a topic <pod>@<model> names its pod; a topic that
// names no pod (vLLM's default) is dropped and counted.
func TestBindTopicPrefix(t *testing.T) {
	got, ref := newCell(t), newCell(t)
	cfg := testConfig()
	cfg.Bind, cfg.TopicPrefix = "tcp://127.0.0.1:0", ""
	s, err := New(cfg, got.a)
	if err != nil {
		t.Fatal(err)
	}
	runSubscriber(t, s)
	start := func(topic string) *vllmpub.Publisher {
		c := vllmpub.DefaultConfig(testPod, testModel)
		c.Connect, c.Endpoint, c.ReplayEndpoint, c.Topic = true, s.BindEndpoint(), "", topicPtr(topic)
		p := startPublisher(t, c)
		waitFor(t, func() string { return "publisher never saw the subscription" }, p.Subscribed)
		return p
	}
	named := start("pod-7@m7")
	anon := start("")
	publishAll(t, named, ref, "pod-7", "m7", newWorkload(14, 16).batches(20))
	for _, b := range newWorkload(15, 16).batches(5) {
		if _, err := anon.Publish(b); err != nil {
			t.Fatal(err)
		}
	}
	waitEqual(t, got, ref)
	c := s.Counters()
	waitFor(t, func() string {
		return fmt.Sprintf("got %d topic drops, want 5", c.DecodeErrors[reasonIndex("topic")].Load())
	}, func() bool { return c.DecodeErrors[reasonIndex("topic")].Load() == 5 })
}

// TestBindSlowReplayStallsOnlyItsPod connects two engines to the Bind
// socket. Engine a's first message needs a catch-up from a replay socket
// that never answers; engine b's events must still be applied at once, not
// after a's replay times out.
func TestBindSlowReplayStallsOnlyItsPod(t *testing.T) {
	got, ref := newCell(t), newCell(t)
	book := &replayBook{}
	book.set("a", muteReplay(t))
	cfg := testConfig()
	cfg.Bind, cfg.ResolveReplay = "tcp://127.0.0.1:0", book.get
	cfg.ReplayTimeout = time.Hour // longer than any test wait
	cfg.QueueDepth = 64
	s, err := New(cfg, got.a)
	if err != nil {
		t.Fatal(err)
	}
	runSubscriber(t, s)
	start := func(pod string, skip func(uint64) bool) *vllmpub.Publisher {
		c := vllmpub.DefaultConfig(pod, testModel)
		c.Connect, c.Endpoint, c.Skip = true, s.BindEndpoint(), skip
		p := startPublisher(t, c)
		waitFor(t, func() string { return "publisher never saw the subscription" }, p.Subscribed)
		return p
	}
	a := start("a", func(seq uint64) bool { return seq < 3 }) // a's first message is seq 3: catch-up
	b := start("b", nil)
	book.set("b", b.ReplayEndpoint())
	for _, bt := range newWorkload(16, 16).batches(80) {
		if _, err := a.Publish(bt); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() string { return "engine a's catch-up never started" },
		func() bool { return s.Counters().ReplaysRequested.Load() >= 1 })
	publishAll(t, b, ref, "b", testModel, newWorkload(17, 16).batches(20))
	waitEqual(t, got, ref) // b alone: a's batches wait behind its replay
	// a's queue holds 64 behind the message stuck in the replay: of its 77
	// messages at least 12 were dropped (a replay would repair them).
	c := s.Counters()
	waitFor(t, func() string {
		return fmt.Sprintf("got %d queue_full drops, want at least 12", c.DecodeErrors[reasonIndex("queue_full")].Load())
	}, func() bool { return c.DecodeErrors[reasonIndex("queue_full")].Load() >= 12 })
}
