package cell

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// The prefix wait in picker mode: the gateway's request waits for its
// answer (the destination) while the pick is still prefilling more of the
// request's prefix than it holds, as proxy mode holds its own request.

// waitCell starts a cell whose picker routes to gated pods, with the
// prefix wait on (max_wait a minute unless mod says otherwise) and an
// engine model slow enough that the wait's bound outlasts the test.
func waitCell(t *testing.T, pods map[string]*gatedPod, mod func(*Config)) (*Cell, extprocv3.ExternalProcessorClient) {
	t.Helper()
	cfg := testConfig()
	for _, id := range []string{"a", "b", "c"} {
		if p := pods[id]; p != nil {
			p.releaseAtEnd(t)
			cfg.Pods = append(cfg.Pods, PodConfig{ID: id, Address: p.addr(), KVBlocks: 10000})
		}
	}
	cfg.EPPAddr = "127.0.0.1:0"
	cfg.EngineMetrics.Enabled = false
	cfg.Routing.PrefixWait = PrefixWaitConfig{Enabled: true, MaxWait: time.Minute}
	// The engine model of the cost (ttft) weighs a block's prefill as the
	// prefix wait does, so that a follow-up is picked where its previous
	// turn went. With the blocks cost an idle pod (80 blocks to compute)
	// outbids the busy one (16 to compute, 65 in flight).
	cfg.Routing.Cost.Model = CostTTFT
	cfg.Routing.Cost.PrefillPerTokenUs = 1e5
	if mod != nil {
		mod(&cfg)
	}
	c := startCell(t, cfg)
	waitFor(t, "healthz", func() bool { code, _ := get(t, "http://"+c.HTTPAddr()+"/healthz"); return code == 200 })
	cc, err := grpc.NewClient(c.EPPAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return c, extprocv3.NewExternalProcessorClient(cc)
}

// addr is the pod's host:port.
func (p *gatedPod) addr() string { return strings.TrimPrefix(p.srv.URL, "http://") }

// releaseAtEnd opens, when the test ends (before the pod's server closes,
// which waits for its requests), every gate still closed.
func (p *gatedPod) releaseAtEnd(t *testing.T) {
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for ; p.opened < len(p.gates); p.opened++ {
			close(p.gates[p.opened])
		}
	})
}

// turn is a gateway's call for a completion of toks, within subset when
// not nil.
func turn(toks []uint32, subset ...string) epptest.Call {
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 16})
	return epptest.Call{Method: http.MethodPost, Path: "/v1/completions", Header: http.Header{"Content-Type": {"application/json"}},
		Body: body, Frames: 2, Subset: subset}
}

// outcome is what one gateway call came to, and when it ended.
type outcome struct {
	out *epptest.Outcome
	err error
	at  time.Time
}

// goDo runs call against client in its own goroutine; its outcome arrives
// on the returned channel.
func goDo(ctx context.Context, client extprocv3.ExternalProcessorClient, call epptest.Call) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		out, err := epptest.Do(ctx, client, call)
		ch <- outcome{out, err, time.Now()}
	}()
	return ch
}

// await returns the outcome on ch, failing the test when it errs, is not
// routed, does not answer 200, or takes longer than 30 s.
func await(t *testing.T, what string, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("%s: %v", what, o.err)
		}
		if o.out.Immediate != nil {
			t.Fatalf("%s: immediate %d %s", what, o.out.Immediate.GetStatus().GetCode(), o.out.Immediate.GetBody())
		}
		if o.out.Status != http.StatusOK {
			t.Fatalf("%s: the pod answered %d", what, o.out.Status)
		}
		return o
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer within 30s", what)
	}
	return outcome{}
}

// pending reports whether ch has no outcome yet.
func pending(ch <-chan outcome) bool { return len(ch) == 0 }

// followUpOf is a second turn of toks: toks and 16 blocks more.
func followUpOf(toks []uint32, salt uint32) []uint32 {
	return append(append([]uint32(nil), toks...), promptTokens(salt)[:256]...)
}

// TestEPPPrefixWaitHoldsFollowUp plays a conversation through a gateway:
// the first turn is held at its pod (no first token), and the follow-up
// sent meanwhile is answered (its destination) only after the first
// turn's prefill ended, and goes to that pod; while it waits, its ticket
// and its own prefill are on the pod, as in proxy mode, and the wait is
// counted in cellrouter_prefix_waits_total. With the prefix wait off the
// follow-up is answered at once.
func TestEPPPrefixWaitHoldsFollowUp(t *testing.T) {
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "enabled", false: "disabled"}[on]
		t.Run(name, func(t *testing.T) {
			a, b := newGatedPod(t, 1), newGatedPod(t, 0)
			c, client := waitCell(t, map[string]*gatedPod{"a": a, "b": b}, func(cfg *Config) { cfg.Routing.PrefixWait.Enabled = on })
			first := promptTokens(1)
			// The subset puts the first turn on a; the follow-up may go
			// anywhere.
			firstDone := goDo(context.Background(), client, turn(first, a.addr()))
			waitFor(t, "the first turn at a", func() bool { return a.arrived() == 1 })
			next := goDo(context.Background(), client, turn(followUpOf(first, 2)))
			if on {
				waitFor(t, "the follow-up to wait", func() bool {
					if b.arrived() > 0 {
						t.Fatalf("the follow-up went to b")
					}
					return c.router.prefixWaiting.Load() == 1
				})
				if u := c.router.tracker.Usage("a"); u.Requests != 2 || c.router.prefills.Len("a") != 2 {
					t.Fatalf("while the follow-up waits: a carries %d requests and %d prefills, want 2 and 2 (its ticket and its own prefill)",
						u.Requests, c.router.prefills.Len("a"))
				}
				if a.arrived() != 1 || b.arrived() != 0 || !pending(next) {
					t.Fatalf("the follow-up was answered while it waits: a saw %d, b %d", a.arrived(), b.arrived())
				}
				a.open()
			} else {
				o := await(t, "the follow-up", next)
				if !strings.HasPrefix(o.out.Destination, a.addr()) || a.arrived() != 2 || !pending(firstDone) {
					t.Fatalf("follow-up sent to %s, a saw %d requests: want a, beside the first turn", o.out.Destination, a.arrived())
				}
				a.open()
			}
			await(t, "the first turn", firstDone)
			if on {
				o := await(t, "the follow-up", next)
				if o.out.Destinations()[0] != a.addr() || o.out.Served != a.addr() || o.out.ResponseSetHeaders[strings.ToLower(PodHeader)] != "a" {
					t.Fatalf("follow-up sent to %v, served by %s: want a", o.out.Destinations(), o.out.Served)
				}
				if strings.Join(a.log(), ",") != "req,gate,req" {
					t.Fatalf("a saw %v, want req,gate,req (the follow-up after the first turn's prefill)", a.log())
				}
			}
			waitFor(t, "every call to end", func() bool {
				return c.router.tracker.Usage("a").Requests == 0 && c.router.prefills.Len("a") == 0 && c.router.prefills.Len("b") == 0
			})
			stored := 0.0
			if on {
				stored = 1
			}
			if got := metric(t, c, "cellrouter_prefix_waits_total", `outcome="stored"`); got != stored {
				t.Errorf("cellrouter_prefix_waits_total{outcome=stored} %v, want %v", got, stored)
			}
			if got := metric(t, c, "cellrouter_prefix_waiting"); got != 0 {
				t.Errorf("cellrouter_prefix_waiting %v, want 0", got)
			}
		})
	}
}

// TestEPPPrefixWaitChain plays three turns of one conversation through a
// gateway, the second and third sent while the first is still prefilled:
// the second's pick registered its own prefill before it waited, so the
// third waits for the second (which stores more of its prefix) and does
// not start beside it once the first ends.
func TestEPPPrefixWaitChain(t *testing.T) {
	a, b := newGatedPod(t, 2), newGatedPod(t, 0)
	c, client := waitCell(t, map[string]*gatedPod{"a": a, "b": b}, nil)
	t1 := promptTokens(1)
	t2 := followUpOf(t1, 2)
	t3 := followUpOf(t2, 3)
	d1 := goDo(context.Background(), client, turn(t1, a.addr()))
	waitFor(t, "the first turn at a", func() bool { return a.arrived() == 1 })
	d2 := goDo(context.Background(), client, turn(t2))
	waitFor(t, "the second turn to wait", func() bool { return c.router.prefixWaiting.Load() == 1 })
	d3 := goDo(context.Background(), client, turn(t3))
	waitFor(t, "the third turn to wait", func() bool { return c.router.prefixWaiting.Load() == 2 })
	a.open() // the first turn answers: the second goes
	await(t, "the first turn", d1)
	waitFor(t, "the second turn at a", func() bool { return a.arrived() == 2 })
	if c.router.prefixWaiting.Load() != 1 || !pending(d3) {
		t.Fatalf("the third turn went with the second (waiting %d)", c.router.prefixWaiting.Load())
	}
	a.open() // the second answers: the third goes
	for i, d := range []<-chan outcome{d2, d3} {
		if o := await(t, "a follow-up", d); o.out.Served != a.addr() {
			t.Fatalf("turn %d served by %s, want a", i+2, o.out.Served)
		}
	}
	if got, want := strings.Join(a.log(), ","), "req,gate,req,gate,req"; got != want || b.arrived() != 0 {
		t.Fatalf("a saw %s, b %d requests: want %s and none (the third turn went beside the second)", got, b.arrived(), want)
	}
	if got := metric(t, c, "cellrouter_prefix_waits_total", `outcome="stored"`); got != 2 {
		t.Errorf("cellrouter_prefix_waits_total{outcome=stored} %v, want 2", got)
	}
}
