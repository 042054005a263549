package zmqsub

import (
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Endpoints = []Endpoint{{Pub: "tcp://127.0.0.1:5557", Replay: "tcp://127.0.0.1:5558"}}
	cases := []struct {
		name  string
		mod   func(*Config)
		field string // "" means valid
	}{
		{"valid dial", func(*Config) {}, ""},
		{"valid bind", func(c *Config) { c.Endpoints = nil; c.Bind = "tcp://*:5557" }, ""},
		{"nothing", func(c *Config) { c.Endpoints = nil }, "Endpoints"},
		{"bad pub", func(c *Config) { c.Endpoints[0].Pub = "127.0.0.1:5557" }, "Endpoints[0].Pub"},
		{"bad replay", func(c *Config) { c.Endpoints[0].Replay = "x" }, "Endpoints[0].Replay"},
		{"bad bind", func(c *Config) { c.Bind = "tcp://" }, "Bind"},
		{"bad replay map", func(c *Config) { c.ReplayEndpoints = map[string]string{"p": "p:1"} }, "ReplayEndpoints"},
		{"bad template", func(c *Config) { c.ReplayTemplate = "{host}:5558" }, "ReplayTemplate"},
		{"negative limit", func(c *Config) { c.Limits.MaxEvents = -1 }, "Limits"},
		{"zero replay timeout", func(c *Config) { c.ReplayTimeout = 0 }, "ReplayTimeout"},
		{"zero replay batches", func(c *Config) { c.ReplayMaxBatches = 0 }, "ReplayMaxBatches"},
		{"backoff inverted", func(c *Config) { c.ReconnectMax = c.ReconnectMin / 2 }, "ReconnectMin"},
		{"zero log interval", func(c *Config) { c.LogEvery = 0 }, "LogEvery"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			c.Endpoints = append([]Endpoint(nil), ok.Endpoints...)
			tc.mod(&c)
			err := c.Validate()
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("got %v, want nil", err)
			case tc.field != "" && (err == nil || !strings.Contains(err.Error(), "Config."+tc.field)):
				t.Fatalf("got %v, want an error naming Config.%s", err, tc.field)
			}
		})
	}
}

func TestReplayFor(t *testing.T) {
	c := DefaultConfig()
	c.ReplayEndpoints = map[string]string{"a:8000": "tcp://a:9999"}
	c.ReplayTemplate = "tcp://{host}:5558?pod={pod}"
	c.ResolveReplay = func(pod string) string {
		if pod == "dyn" {
			return "tcp://dyn:1"
		}
		return ""
	}
	cases := []struct {
		pod  string
		rank int
		want string
	}{
		{"dyn", -1, "tcp://dyn:1"},
		{"dyn", 0, "tcp://dyn:1"},
		{"dyn", 2, "tcp://dyn:3"}, // vLLM offsets rank r's sockets by r
		{"a:8000", -1, "tcp://a:9999"},
		{"10.0.0.7:8000", -1, "tcp://10.0.0.7:5558?pod=10.0.0.7:8000"},
		{"host", -1, "tcp://host:5558?pod=host"},
	}
	for _, tc := range cases {
		if got := c.replayFor(tc.pod, tc.rank); got != tc.want {
			t.Errorf("replayFor(%q, %d): got %q, want %q", tc.pod, tc.rank, got, tc.want)
		}
	}
	c.ReplayTemplate, c.ResolveReplay = "", nil
	if got := c.replayFor("b", -1); got != "" {
		t.Errorf("replayFor(unknown) without template: got %q, want \"\"", got)
	}
}

func TestRateLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRateLimiter(time.Second, func() time.Time { return now })
	steps := []struct {
		advance    time.Duration
		key        string
		ok         bool
		suppressed uint64
	}{
		{0, "a", true, 0},
		{100 * time.Millisecond, "a", false, 0},
		{100 * time.Millisecond, "a", false, 0},
		{0, "b", true, 0}, // keys are independent
		{900 * time.Millisecond, "a", true, 2},
		{500 * time.Millisecond, "a", false, 0},
		{600 * time.Millisecond, "a", true, 1},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		ok, sup := r.allow(s.key)
		if ok != s.ok || sup != s.suppressed {
			t.Errorf("step %d (%s): got (%v, %d), want (%v, %d)", i, s.key, ok, sup, s.ok, s.suppressed)
		}
	}
}

func TestReplayFrames(t *testing.T) {
	seq, pl := vllmwire.EncodeSeq(3), []byte{0x90}
	cases := []struct {
		name string
		in   [][]byte
		want int // frames left
	}{
		{"bare", [][]byte{seq, pl}, 2},
		{"delimited", [][]byte{{}, seq, pl}, 2},
		{"delimited with topic", [][]byte{{}, []byte("kv@p@m"), seq, pl}, 2},
		{"topic", [][]byte{[]byte("kv@p@m"), seq, pl}, 2},
		{"empty", nil, 0},
		{"too many", [][]byte{seq, pl, pl, pl}, 4},
	}
	for _, tc := range cases {
		if got := replayFrames(tc.in); len(got) != tc.want {
			t.Errorf("%s: got %d frames, want %d", tc.name, len(got), tc.want)
		}
	}
}

// FuzzReplayFrames feeds arbitrary replay frames through the frame
// normalisation and the decoder, as a hostile replay socket could.
func FuzzReplayFrames(f *testing.F) {
	payload, _ := vllmwire.EncodePayload(nil, &events.Batch{DPRank: -1, Events: []events.Event{{Kind: events.KindAllBlocksCleared}}}, vllmwire.FormArray)
	f.Add([]byte{}, vllmwire.EncodeSeq(1), payload, uint8(3))
	f.Add([]byte("kv@p@m"), vllmwire.EncodeSeq(vllmwire.ReplayEndSeq), []byte{}, uint8(3))
	f.Add([]byte{}, []byte{1, 2}, []byte{0xc1}, uint8(2))
	f.Fuzz(func(t *testing.T, a, b, c []byte, n uint8) {
		frames := [][]byte{a, b, c, a}[:int(n)%5]
		var bt events.Batch
		done, err := vllmwire.DecodeReplay(replayFrames(frames), &bt, vllmwire.DefaultLimits())
		if done && err != nil {
			t.Fatalf("done with error %v", err)
		}
	})
}

// TestReplayTimeoutGivesUp points the subscriber at a replay socket that
// never answers: the replay times out and the gap is given up.
func TestReplayTimeoutGivesUp(t *testing.T) {
	muteEP := muteReplay(t)

	r := newRig(t, false, vllmwire.FormArray, func(c *vllmpub.Config) {
		c.ReplayEndpoint = ""
		c.Skip = func(seq uint64) bool { return seq == 3 }
	}, func(c *Config) { c.ReplayTimeout = 300 * time.Millisecond })
	// The rig dialed without a replay socket; restart the cell with the
	// mute one.
	r.stop()
	r.waitUnsubscribed()
	r.got = newCell(t)
	r.scfg.Endpoints[0].Replay = muteEP
	r.startSub()
	r.waitSubscribed()
	for _, b := range newWorkload(7, 16).batches(10) {
		if _, err := r.pub.Publish(b); err != nil {
			t.Fatal(err)
		}
	}
	c := r.sub.Counters()
	// The first message (seq 0) needs no catch-up; seq 4 reveals the gap.
	waitFor(t, r.String, func() bool { return r.got.a.Counters().Batches.Load() == 9 })
	if got := c.ReplaysFailed.Load(); got != 1 {
		t.Errorf("got %d failed replays, want 1 (%s)", got, r)
	}
	if got := c.GiveUps.Load(); got != 1 {
		t.Errorf("got %d give-ups, want 1 (%s)", got, r)
	}
}

// TestDecodeErrorsAreCountedAndDropped sends malformed payloads between
// good ones: each is counted under its reason, and the good ones apply.
func TestDecodeErrorsAreCountedAndDropped(t *testing.T) {
	r := newRig(t, false, vllmwire.FormArray, func(c *vllmpub.Config) { c.ReplayEndpoint = "" }, nil)
	good := newWorkload(8, 16).batches(6)
	bad := [][]byte{{0xc1}, {0x93, 0xcb}, {0x92, 0x01, 0x91, 0x91, 0xa3, 'F', 'o', 'o'}}
	for i, b := range good {
		if _, err := r.pub.Publish(b); err != nil {
			t.Fatal(err)
		}
		if i < len(bad) {
			if _, err := r.pub.PublishPayload(bad[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := r.sub.Counters()
	// Messages is counted before a message is handled: wait for the last
	// one's outcome too.
	waitFor(t, r.String, func() bool {
		return c.Messages.Load() == uint64(len(good)+len(bad)) &&
			c.DecodeErrorsTotal()+r.got.a.Counters().Batches.Load() >= uint64(len(good)+len(bad))
	})
	if got := c.DecodeErrorsTotal(); got != uint64(len(bad)) {
		t.Errorf("got %d decode errors, want %d (%s)", got, len(bad), r)
	}
	if got := c.DecodeErrors[reasonIndex("unknown_tag")].Load(); got != 1 {
		t.Errorf("got %d unknown_tag errors, want 1", got)
	}
	// The bad payloads consumed sequence numbers: without a replay socket
	// each gap is given up and the next good batch applies as a baseline.
	if got := r.got.a.Counters().Batches.Load(); got != uint64(len(good)) {
		t.Errorf("applier applied %d batches, want %d", got, len(good))
	}
}

func TestOffsetPort(t *testing.T) {
	cases := []struct {
		ep   string
		n    int
		want string
	}{
		{"tcp://10.0.0.7:5557", 0, "tcp://10.0.0.7:5557"},
		{"tcp://10.0.0.7:5557", 3, "tcp://10.0.0.7:5560"},
		{"tcp://[::1]:5557", 1, "tcp://[::1]:5558"},
		{"tcp://host", 1, "tcp://host"},
		{"inproc://x", 1, "inproc://x"},
	}
	for _, tc := range cases {
		if got := OffsetPort(tc.ep, tc.n); got != tc.want {
			t.Errorf("OffsetPort(%q, %d): got %q, want %q", tc.ep, tc.n, got, tc.want)
		}
	}
}
