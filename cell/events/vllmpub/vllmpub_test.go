package vllmpub

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/go-zeromq/zmq4"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestRingMatchesReference checks the ring against a plain slice that
// keeps the last size entries.
func TestRingMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 2, 3, 7, 64} {
		r := newRing(size)
		var ref []entry
		for seq := range uint64(300) {
			e := entry{seq: seq, payload: []byte{byte(seq)}}
			r.push(e)
			ref = append(ref, e)
			if len(ref) > size {
				ref = ref[1:]
			}
			from := uint64(rng.IntN(int(seq) + 3))
			got := r.since(nil, from)
			var want []entry
			for _, x := range ref {
				if x.seq >= from {
					want = append(want, x)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("size %d seq %d since(%d): got %d entries, want %d", size, seq, from, len(got), len(want))
			}
			for i := range got {
				if got[i].seq != want[i].seq || got[i].payload[0] != want[i].payload[0] {
					t.Fatalf("size %d seq %d since(%d)[%d]: got seq %d, want %d", size, seq, from, i, got[i].seq, want[i].seq)
				}
			}
			lo, hi, ok := r.bounds()
			if !ok || lo != ref[0].seq || hi != seq {
				t.Fatalf("size %d: got bounds (%d, %d, %v), want (%d, %d, true)", size, lo, hi, ok, ref[0].seq, seq)
			}
		}
	}
}

func TestParseReplayRequest(t *testing.T) {
	seq := binary.BigEndian.AppendUint64(nil, 42)
	cases := []struct {
		name   string
		frames [][]byte
		start  uint64
		delim  bool
		ok     bool
	}{
		{"dealer", [][]byte{seq}, 42, false, true},
		{"req", [][]byte{{}, seq}, 42, true, true},
		{"short seq", [][]byte{{1, 2}}, 0, false, false},
		{"no frames", nil, 0, false, false},
		{"two non-empty", [][]byte{{1}, seq}, 0, false, false},
		{"three", [][]byte{{}, {}, seq}, 0, false, false},
	}
	for _, tc := range cases {
		start, delim, err := ParseReplayRequest(tc.frames)
		if (err == nil) != tc.ok || start != tc.start || delim != tc.delim {
			t.Errorf("%s: got (%d, %v, %v), want (%d, %v, ok %v)", tc.name, start, delim, err, tc.start, tc.delim, tc.ok)
		}
	}
}

// FuzzParseReplayRequest checks that any request frames parse or fail
// cleanly, and that a parsed seq round-trips.
func FuzzParseReplayRequest(f *testing.F) {
	f.Add([]byte{}, binary.BigEndian.AppendUint64(nil, 7), true)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte{}, false)
	f.Add([]byte{1}, []byte{2}, true)
	f.Fuzz(func(t *testing.T, a, b []byte, two bool) {
		frames := [][]byte{a}
		if two {
			frames = append(frames, b)
		}
		start, _, err := ParseReplayRequest(frames)
		if err == nil && !slicesHasSeq(frames, start) {
			t.Fatalf("parsed %d from %x", start, frames)
		}
	})
}

func slicesHasSeq(frames [][]byte, seq uint64) bool {
	last := frames[len(frames)-1]
	return len(last) == 8 && binary.BigEndian.Uint64(last) == seq
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name  string
		mod   func(*Config)
		field string
	}{
		{"default", func(*Config) {}, ""},
		{"bad endpoint", func(c *Config) { c.Endpoint = "127.0.0.1:1" }, "Endpoint"},
		{"bad replay", func(c *Config) { c.ReplayEndpoint = "x" }, "ReplayEndpoint"},
		{"empty pod", func(c *Config) { c.Pod = "" }, "Pod"},
		{"pod with @", func(c *Config) { c.Pod = "a@b" }, "Pod"},
		{"bad form", func(c *Config) { c.Form = 0x80 }, "Form"},
		{"no buffer", func(c *Config) { c.BufferSize = 0 }, "BufferSize"},
		{"connect without timeout", func(c *Config) { c.Connect, c.DialTimeout = true, 0 }, "DialTimeout"},
	}
	for _, tc := range cases {
		c := DefaultConfig("pod", "model")
		tc.mod(&c)
		err := c.Validate()
		if tc.field == "" && err != nil || tc.field != "" && (err == nil || !strings.Contains(err.Error(), "Config."+tc.field)) {
			t.Errorf("%s: got %v, want an error naming %q (none if empty)", tc.name, err, tc.field)
		}
	}
}

// TestPublishAndReplayOnTheWire talks to a Publisher with raw zmq4 sockets:
// a SUB receives [topic, seq, payload] and a DEALER replays, with and
// without the REQ delimiter, from the buffer (which keeps the last 4).
func TestPublishAndReplayOnTheWire(t *testing.T) {
	cfg := DefaultConfig("10.0.0.1:8000", "m")
	cfg.BufferSize = 4
	cfg.Logger = quiet
	cfg.Skip = func(seq uint64) bool { return seq == 1 }
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
		t.Fatal(err)
	}
	if err := sub.Dial(p.Endpoint()); err != nil {
		t.Fatal(err)
	}
	for !p.Subscribed() {
		if ctx.Err() != nil {
			t.Fatal("never subscribed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range 6 {
		b := &events.Batch{DPRank: 2, TS: float64(i), Events: []events.Event{{Kind: events.KindAllBlocksCleared}}}
		if seq, err := p.Publish(b); err != nil || seq != uint64(i) {
			t.Fatalf("Publish %d: got (%d, %v), want (%d, nil)", i, seq, err, i)
		}
	}
	// Live: every seq but the skipped one, in order.
	for _, want := range []uint64{0, 2, 3, 4, 5} {
		b := recvBatch(t, sub)
		if b.Seq != want || b.Pod != cfg.Pod || b.Model != "m" || b.DPRank != 2 || b.TS != float64(want) {
			t.Fatalf("got batch seq %d pod %q model %q rank %d ts %v, want seq %d", b.Seq, b.Pod, b.Model, b.DPRank, b.TS, want)
		}
	}
	for _, delim := range []bool{true, false} {
		dealer := zmq4.NewDealer(ctx)
		if err := dealer.Dial(p.ReplayEndpoint()); err != nil {
			t.Fatal(err)
		}
		req := zmq4.NewMsgFrom(vllmwire.EncodeSeq(0))
		if delim {
			req = zmq4.NewMsgFrom([]byte{}, vllmwire.EncodeSeq(0))
		}
		if err := dealer.SendMulti(req); err != nil {
			t.Fatal(err)
		}
		// The buffer holds 2..5 (size 4), the skipped 1 is gone with 0.
		var got []uint64
		for {
			msg, err := dealer.Recv()
			if err != nil {
				t.Fatal(err)
			}
			frames := msg.Frames
			if delim {
				if len(frames[0]) != 0 {
					t.Fatalf("reply without the delimiter: %q", frames)
				}
				frames = frames[1:]
			}
			var b events.Batch
			done, err := vllmwire.DecodeReplay(frames, &b, vllmwire.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
			got = append(got, b.Seq)
		}
		dealer.Close()
		if want := []uint64{2, 3, 4, 5}; len(got) != len(want) || got[0] != 2 || got[3] != 5 {
			t.Errorf("delim %v: replayed %v, want %v", delim, got, want)
		}
	}
	if got := p.Counters().Replays.Load(); got != 2 {
		t.Errorf("got %d replays served, want 2", got)
	}
	if lo, hi, ok := p.Buffered(); !ok || lo != 2 || hi != 5 {
		t.Errorf("got Buffered (%d, %d, %v), want (2, 5, true)", lo, hi, ok)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := p.Publish(&events.Batch{}); err != ErrClosed {
		t.Errorf("Publish after Close: got %v, want ErrClosed", err)
	}
}

// BenchmarkPublishPayload measures numbering, buffering and queueing one
// pre-encoded batch on a socket with no subscriber.
func BenchmarkPublishPayload(b *testing.B) {
	cfg := DefaultConfig("p", "m")
	cfg.Logger = quiet
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	payloads, err := EncodePayloads([]*events.Batch{{DPRank: -1, Events: []events.Event{{Kind: events.KindAllBlocksCleared}}}}, vllmwire.FormArray)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.PublishPayload(payloads[0]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConnectRedialsSilentPeer covers the supervisor of a Connect-mode
// publisher whose peer accepted the connection but never subscribed (a
// dying listener, or a subscription that came and went between two
// checks): the socket is redialed, and a subscriber that binds the address
// afterwards gets the batches.
func TestConnectRedialsSilentPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	silent := zmq4.NewSub(ctx) // binds, never subscribes
	if err := silent.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	addr := "tcp://" + silent.Addr().String()

	cfg := DefaultConfig("10.0.0.1:8000", "m")
	cfg.Logger = quiet
	cfg.Endpoint, cfg.Connect, cfg.ReplayEndpoint = addr, true, ""
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for p.Counters().Redials.Load() == 0 {
		if ctx.Err() != nil {
			t.Fatal("a socket with no subscription was never redialed")
		}
		time.Sleep(20 * time.Millisecond)
	}

	silent.Close()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
		t.Fatal(err)
	}
	for sub.Listen(addr) != nil { // the old listener's port may linger
		if ctx.Err() != nil {
			t.Fatal("could not bind the subscriber again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for !p.Subscribed() {
		if ctx.Err() != nil {
			t.Fatalf("never subscribed after %d redials", p.Counters().Redials.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := p.Publish(&events.Batch{Events: []events.Event{{Kind: events.KindAllBlocksCleared}}}); err != nil {
		t.Fatal(err)
	}
	if b := recvBatch(t, sub); b.Pod != cfg.Pod {
		t.Fatalf("got a batch of pod %q, want %q", b.Pod, cfg.Pod)
	}
}

// recvBatch receives one message on sub and decodes it.
func recvBatch(t *testing.T, sub zmq4.Socket) events.Batch {
	t.Helper()
	msg, err := sub.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var b events.Batch
	if err := vllmwire.DecodeMessage(msg.Frames, &b, vllmwire.Limits{}); err != nil {
		t.Fatal(err)
	}
	return b
}
