package cell

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// These tests run the set-ups in which real vLLM streams were seen to go
// unindexed (../shared/repro/vllm_events_ingest.py checks the same from
// outside, against the celld binary): one 16-token block, published as an
// engine publishes it, must be found at depth 1 on the configured pod.

const engineAddr = "10.0.0.7:8000"

// oneBlock is a BlockStored of tokens(16) in vLLM 0.26's map form, with
// extra_keys one nil per block when v026 is set.
func oneBlock(v026 bool) *events.Batch {
	ev := events.Event{Kind: events.KindBlockStored, BlockHashes: []uint64{0xdab89baa7b5857c0}, TokenIDs: tokens(16), BlockSize: 16, Medium: "GPU"}
	if v026 {
		ev.ExtraKeys = []events.BlockKeys{nil} // encoded as [nil]
	}
	return &events.Batch{TS: float64(time.Now().UnixNano()) / 1e9, DPRank: 0, Events: []events.Event{ev}}
}

func strPtr(s string) *string { return &s }

// podIDs lists the cell's pods by id.
func podIDs(t *testing.T, c *Cell) []string {
	t.Helper()
	_, body := get(t, "http://"+c.HTTPAddr()+"/v1/cell/pods")
	var out struct {
		Pods []struct {
			ID string `json:"id"`
		} `json:"pods"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range out.Pods {
		ids = append(ids, p.ID)
	}
	return ids
}

func TestRealEngineSetups(t *testing.T) {
	cases := []struct {
		name       string
		bind       bool
		pod        PodConfig
		topic      string
		defModel   string
		v026       bool
		beforeCell bool // publish the block before the cell starts: only the replay brings it
	}{
		{"vLLM 0.26 extra_keys [None]", true, PodConfig{ID: engineAddr, Address: engineAddr}, "kv@" + engineAddr + "@m", "", true, false},
		{"vLLM default empty topic, dialed", false, PodConfig{ID: engineAddr, Address: engineAddr}, "", "m", false, false},
		{"pod id differs from the topic's address, dialed", false, PodConfig{ID: "pod-0", Address: engineAddr}, "kv@" + engineAddr + "@m", "", false, false},
		{"catch-up replay under the topic's model", false, PodConfig{ID: engineAddr, Address: engineAddr}, "kv@" + engineAddr + "@m", "", false, true},
		{"pod named by its address in bind mode", true, PodConfig{ID: "pod-0", Address: engineAddr}, "kv@" + engineAddr + "@m", "", true, false},
		{"custom topic, dialed, vLLM 0.26", false, PodConfig{ID: "pod-0", Address: engineAddr, Model: "m"}, "kv-events", "", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Events.DefaultModel = tc.defModel
			cfg.Events.DeadAfter = 10 * time.Minute
			pcfg := vllmpub.DefaultConfig(engineAddr, "m")
			pcfg.Topic = strPtr(tc.topic)
			pcfg.Form = vllmwire.FormMap
			var pub *vllmpub.Publisher
			var c *Cell
			if tc.bind {
				cfg.ZMQ.Bind = "tcp://127.0.0.1:0"
				cfg.Pods = []PodConfig{tc.pod}
				c = startCell(t, cfg)
				waitFor(t, "bind", func() bool { return c.ZMQBindEndpoint() != "" })
				pcfg.Connect, pcfg.Endpoint = true, c.ZMQBindEndpoint()
			}
			pub, err := vllmpub.New(pcfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pub.Close()
			publish := func(b *events.Batch) {
				if _, err := pub.Publish(b); err != nil {
					t.Fatal(err)
				}
			}
			if tc.beforeCell {
				publish(oneBlock(tc.v026)) // seq 0: nobody listens, the replay buffer keeps it
			}
			if !tc.bind {
				tc.pod.ZMQEndpoint, tc.pod.ReplayEndpoint = pub.Endpoint(), pub.ReplayEndpoint()
				cfg.Pods = []PodConfig{tc.pod}
				c = startCell(t, cfg)
			}
			waitFor(t, "subscription", pub.Subscribed)
			b := oneBlock(tc.v026)
			if tc.beforeCell {
				// A second block extends the first; its arrival tells the
				// cell the topic's model.
				b.Events[0].BlockHashes, b.Events[0].ParentHash, b.Events[0].HasParent = []uint64{0x1234}, 0xdab89baa7b5857c0, true
				b.Events[0].TokenIDs = tokens(32)[16:]
			}
			publish(b)
			want := 1
			if tc.beforeCell {
				want = 2
			}
			var got map[string]int
			waitFor(t, "the block indexed", func() bool {
				got = routeDepths(t, c, "m", "", tokens(16*want))
				return got[tc.pod.ID] == want
			})
			if ids := podIDs(t, c); len(ids) != 1 || ids[0] != tc.pod.ID {
				t.Errorf("got pods %v, want only %s (no pod discovered from the topic)", ids, tc.pod.ID)
			}
		})
	}
}

// TestUnindexedWarnings checks that the cell says once per pod and reason,
// in words, when events arrive but blocks cannot be indexed, and that the
// state API reports transport drops by reason while leaving harmless
// duplicates out of events_dropped.
func TestUnindexedWarnings(t *testing.T) {
	logs := &servertest.LogBuffer{}
	cfg := testConfig()
	cfg.ZMQ.Bind = "tcp://127.0.0.1:0"
	cfg.Events.Models = []string{"m"}
	cfg.Pods = []PodConfig{{ID: "pod-0", Address: engineAddr}, {ID: "pod-1", Address: "10.0.0.8:8000"}}
	c, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "bind", func() bool { return c.ZMQBindEndpoint() != "" })

	start := func(topic string) *vllmpub.Publisher {
		pcfg := vllmpub.DefaultConfig("x", "")
		pcfg.Connect, pcfg.Endpoint, pcfg.Topic, pcfg.Form = true, c.ZMQBindEndpoint(), strPtr(topic), vllmwire.FormMap
		p, err := vllmpub.New(pcfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		waitFor(t, "subscription", p.Subscribed)
		return p
	}
	image := oneBlock(false)
	image.Events[0].ExtraKeys = []events.BlockKeys{{{Kind: events.KeyOther, Text: `["img",0]`, Raw: []byte{0x92, 0xa3, 'i', 'm', 'g', 0}}}}
	p0 := start("kv@pod-0@m")
	p1 := start("kv@pod-1@other-model")
	stranger := start("kv@10.9.9.9:8000@m")
	anon := start("")
	for i := 0; i < 3; i++ {
		for _, p := range []*vllmpub.Publisher{p0, p1} {
			b := image
			if p == p1 {
				b = oneBlock(false)
			}
			if _, err := p.Publish(b); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := stranger.Publish(oneBlock(false)); err != nil {
			t.Fatal(err)
		}
		if _, err := anon.Publish(oneBlock(false)); err != nil {
			t.Fatal(err)
		}
	}
	// A raw engine that sends a 7-byte sequence frame.
	raw := zmq4.NewPub(ctx)
	defer raw.Close()
	if err := raw.Dial(c.ZMQBindEndpoint()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "warnings", func() bool {
		l := logs.String()
		return strings.Contains(l, "unmapped_extra_keys") && strings.Contains(l, "unknown_model") &&
			strings.Contains(l, "not configured") && strings.Contains(l, "topic names no pod")
	})
	waitFor(t, "a bad sequence frame dropped", func() bool {
		_ = raw.Send(zmq4.NewMsgFrom([]byte("kv@pod-0@m"), make([]byte, 7), []byte{0x90}))
		st, _ := c.state.GetCellState(ctx, nil)
		return st.GetTransportDroppedByReason()["zmq/bad_seq"] > 0
	})
	l := logs.String()
	for _, want := range []struct {
		what string
		n    int
	}{
		{`reason=unmapped_extra_keys`, 1}, // pod-0, three times: one warning
		{`reason=unknown_model`, 1},       // pod-1
	} {
		if got := strings.Count(l, want.what); got != want.n {
			t.Errorf("log has %q %d times, want %d:\n%s", want.what, got, want.n, l)
		}
	}
	st, err := c.state.GetCellState(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.GetTransportDroppedByReason()["zmq/topic"] != 3 || st.GetTransportDroppedByReason()["zmq/unknown_pod"] != 3 {
		t.Errorf("got transport drops %v, want zmq/topic 3 and zmq/unknown_pod 3 (a pod that is not configured)", st.GetTransportDroppedByReason())
	}
	if !strings.Contains(l, "not configured") || !strings.Contains(l, "pod=10.9.9.9:8000") {
		t.Errorf("log does not name the unconfigured pod 10.9.9.9:8000:\n%s", l)
	}
	if ids := podIDs(t, c); len(ids) != 2 {
		t.Errorf("got pods %v, want only the two configured (no phantom pod from a topic)", ids)
	}
	if st.GetEventsDroppedByReason()["unknown_model"] != 3 || st.GetEventsDroppedByReason()["unmapped_extra_keys"] != 3 {
		t.Errorf("got event drops %v, want unknown_model 3 and unmapped_extra_keys 3", st.GetEventsDroppedByReason())
	}
	if _, ok := st.GetEventsDroppedByReason()["duplicate"]; ok {
		t.Errorf("duplicates counted among drops: %v", st.GetEventsDroppedByReason())
	}
}
