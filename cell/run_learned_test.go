package cell

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/gossip"
)

// routeAnswer is a pod of the dry-run route API's answer.
type routeAnswer struct {
	Pod               string `json:"pod"`
	MatchedBlocks     int    `json:"matchedBlocks"`
	Approximate       bool   `json:"approximate"`
	SpeculativeBlocks int    `json:"speculativeBlocks"`
}

// dryRoute asks POST /v1/cell/route about toks and returns the pick and
// every candidate by pod.
func dryRoute(t *testing.T, c *Cell, toks []uint32) (routeAnswer, map[string]routeAnswer) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "m", "tokenIds": toks})
	resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/cell/route", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Pick       routeAnswer   `json:"pick"`
		Candidates []routeAnswer `json:"candidates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("route: status %d, %v", resp.StatusCode, err)
	}
	all := map[string]routeAnswer{}
	for _, a := range out.Candidates {
		all[a.Pod] = a
	}
	return out.Pick, all
}

// metric returns the value of the first /metrics line that starts with
// name and contains every label, or -1.
func metric(t *testing.T, c *Cell, name string, labels ...string) float64 {
	t.Helper()
	_, body := get(t, "http://"+c.HTTPAddr()+"/metrics")
next:
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue next
			}
		}
		var v float64
		f := strings.Fields(line)
		if err := json.Unmarshal([]byte(f[len(f)-1]), &v); err == nil {
			return v
		}
	}
	return -1
}

func TestApproximatePodsLearnFromRouting(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b"), newFakePod(t, "c")}
	c := cellWithPods(t, pods, func(cfg *Config) {
		cfg.Approximate.DefaultPodEvents = PodEventsNone
		cfg.Approximate.TTL = 1500 * time.Millisecond // generous: a loaded machine
	})
	toks := promptTokens(21)
	resp, _ := completion(t, "http://"+c.HTTPAddr(), toks, false, nil)
	first := resp.Header.Get(PodHeader)
	if resp.StatusCode != 200 || first == "" {
		t.Fatalf("first request: status %d, pod %q", resp.StatusCode, first)
	}
	// The pod answered: the cell assumes it holds the prompt's 64 blocks,
	// and says the answer is approximate.
	pick, all := dryRoute(t, c, toks)
	if pick.Pod != first || pick.MatchedBlocks != 64 || !pick.Approximate || pick.SpeculativeBlocks != 0 {
		t.Fatalf("got pick %+v, want %s with 64 approximate blocks", pick, first)
	}
	for pod, a := range all {
		if pod != first && (a.MatchedBlocks != 0 || a.Approximate) {
			t.Errorf("pod %s got %+v, want nothing matched", pod, a)
		}
	}
	for i := 0; i < 3; i++ {
		if resp, _ := completion(t, "http://"+c.HTTPAddr(), toks, false, nil); resp.Header.Get(PodHeader) != first {
			t.Fatalf("repeat %d went to %s, want %s (its cache)", i, resp.Header.Get(PodHeader), first)
		}
	}
	if got := metric(t, c, "cellrouter_route_match_source_total", `source="approximate"`); got != 3 {
		t.Errorf("got %v decisions from the approximate index, want 3", got)
	}
	if got := metric(t, c, "cellrouter_index_approximate_pods"); got != 3 {
		t.Errorf("got %v approximate pods, want 3", got)
	}
	// Unused for a TTL, the blocks go.
	waitFor(t, "the approximate blocks to expire", func() bool {
		pick, _ := dryRoute(t, c, toks)
		return pick.MatchedBlocks == 0
	})
	if got := metric(t, c, "cellrouter_index_learned_blocks_total", `event="expired"`); got < 64 {
		t.Errorf("got %v expired learned blocks, want at least 64", got)
	}
}

func TestSpeculativeEntriesBeforeEvents(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b"), newFakePod(t, "c")}
	c := cellWithPods(t, pods, func(cfg *Config) { cfg.Speculative.TTL = 1500 * time.Millisecond }) // generous: a loaded machine
	toks := promptTokens(22)
	resp, _ := completion(t, "http://"+c.HTTPAddr(), toks, false, nil)
	first := resp.Header.Get(PodHeader)
	// No event came (the fake pods publish none), yet the blocks count as
	// the chosen pod's, speculatively, and the next request follows.
	pick, _ := dryRoute(t, c, toks)
	if pick.Pod != first || pick.MatchedBlocks != 64 || pick.SpeculativeBlocks != 64 || pick.Approximate {
		t.Fatalf("got pick %+v, want %s with 64 speculative blocks", pick, first)
	}
	if resp, _ := completion(t, "http://"+c.HTTPAddr(), toks, false, nil); resp.Header.Get(PodHeader) != first {
		t.Fatalf("the follower went to %s, want %s", resp.Header.Get(PodHeader), first)
	}
	if got := metric(t, c, "cellrouter_route_match_source_total", `source="speculative"`); got != 1 {
		t.Errorf("got %v decisions from speculative blocks, want 1", got)
	}
	// The engine's events confirm 40 of the blocks: those stay exact, the
	// other 24 expire with the TTL.
	holdPrefix(t, c, first, toks, 40)
	pick, _ = dryRoute(t, c, toks)
	if pick.MatchedBlocks != 64 || pick.SpeculativeBlocks != 24 {
		t.Fatalf("after the events: pick %+v, want 64 matched of which 24 speculative", pick)
	}
	waitFor(t, "the speculative blocks to expire", func() bool {
		pick, _ := dryRoute(t, c, toks)
		return pick.MatchedBlocks == 40 && pick.SpeculativeBlocks == 0
	})
	if got := metric(t, c, "cellrouter_index_learned_blocks_total", `event="confirmed"`); got != 40 {
		t.Errorf("got %v confirmed blocks, want 40", got)
	}
}

func TestSpeculativeEntriesOff(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c := cellWithPods(t, pods, func(cfg *Config) { cfg.Speculative.TTL = 0 })
	toks := promptTokens(23)
	completion(t, "http://"+c.HTTPAddr(), toks, false, nil)
	if pick, _ := dryRoute(t, c, toks); pick.MatchedBlocks != 0 {
		t.Fatalf("with speculative entries off the pick matched %d blocks, want 0", pick.MatchedBlocks)
	}
}

func TestApproximatePodSwitchesToExact(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c := cellWithPods(t, pods, func(cfg *Config) {
		for i := range cfg.Pods {
			cfg.Pods[i].Events = PodEventsNone
		}
	})
	toks := promptTokens(24)
	resp, _ := completion(t, "http://"+c.HTTPAddr(), toks, false, nil)
	first := resp.Header.Get(PodHeader)
	if pick, _ := dryRoute(t, c, toks); pick.Pod != first || !pick.Approximate {
		t.Fatalf("got %+v, want %s approximate", pick, first)
	}
	// The pod starts publishing: its first event names 10 of the blocks.
	holdPrefix(t, c, first, toks, 10)
	pick, all := dryRoute(t, c, toks)
	if a := all[first]; a.Approximate || a.MatchedBlocks != 10 {
		t.Fatalf("after its first event %s got %+v (pick %+v), want 10 exact blocks", first, a, pick)
	}
	s, _ := c.ix.SlotOf(first)
	if c.learner.Approximate(s) {
		t.Fatalf("the learner still counts %s approximate", first)
	}
}

func TestDeadPodLosesLearnedBlocks(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a")}
	c := cellWithPods(t, pods, func(cfg *Config) {
		cfg.Approximate.DefaultPodEvents = PodEventsNone
		cfg.Events.DeadAfter = 300 * time.Millisecond // no events, no health checks: it dies
	})
	toks := promptTokens(25)
	completion(t, "http://"+c.HTTPAddr(), toks, false, nil)
	// Until the registry kills the silent pod, its slot holds 64 learned
	// blocks; then the slot and its blocks go.
	waitFor(t, "the dead pod's learned blocks to go", func() bool {
		st, _ := c.reg.State("a")
		return st == events.StateDead && c.learner.Stats().ApproximateBlocks == 0 && c.ix.Stats().LivePods == 0
	})
	// It comes back (a good health check): a fresh slot, nothing learned.
	c.reg.ObserveHealth("a", true, time.Now())
	c.router.invalidate()
	c.router.candidates(nil)
	if s, ok := c.ix.SlotOf("a"); !ok || !c.learner.Approximate(s) {
		t.Fatalf("the revived pod got slot %v (%v), want a fresh approximate slot", s, ok)
	}
}

func TestSummaryHoldsApproximateBlocks(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c := cellWithPods(t, pods, func(cfg *Config) { cfg.Approximate.DefaultPodEvents = PodEventsNone })
	toks := promptTokens(26)
	b, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := summarize(b, c.applier, c.learner).Elements(); got != 0 {
		t.Fatalf("an idle cell's summary has %d elements, want 0", got)
	}
	completion(t, "http://"+c.HTTPAddr(), toks, false, nil)
	s := summarize(b, c.applier, c.learner)
	hashes := requestChain(c, toks)
	if got := s.Depth(hashes); got < 60 {
		t.Fatalf("the summary estimates depth %d for the routed prompt, want about 64", got)
	}
	if got := s.Depth(requestChain(c, promptTokens(27))); got != 0 {
		t.Fatalf("the summary estimates depth %d for an unseen prompt, want 0", got)
	}
}

// requestChain hashes toks as the cell hashes a request for model m.
func requestChain(c *Cell, toks []uint32) []index.BlockHash {
	return c.router.hasher.Chain(blockhash.Seed(blockhash.Identity("m", "", "")), toks, nil)
}

// TestLearnedSlotsConcurrentWithEvents routes requests while events for
// the same pods arrive, for the race detector.
func TestLearnedSlotsConcurrentWithEvents(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c := cellWithPods(t, pods, func(cfg *Config) { cfg.Pods[0].Events = PodEventsNone })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := blockhash.DefaultHasher()
		for i := 0; i < 20 && ctx.Err() == nil; i++ {
			toks := promptTokens(uint32(40 + i%3))
			eng := h.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
			hs := make([]uint64, 8+i)
			for j := range hs {
				hs[j] = uint64(eng[j])
			}
			b := &events.Batch{Pod: "b", Model: "m", DPRank: -1, Seq: uint64(i), Events: []events.Event{{
				Kind: events.KindBlockStored, BlockHashes: hs, TokenIDs: toks[:len(hs)*16], BlockSize: 16}}}
			_ = c.Applier().ApplyBatch(ctx, b) // counted below
		}
	}()
	for i := 0; i < 20; i++ {
		completion(t, "http://"+c.HTTPAddr(), promptTokens(uint32(40+i%3)), false, nil)
	}
	<-done
	if got := c.Applier().Counters().Batches.Load(); got != 20 {
		t.Fatalf("applied %d event batches, want 20", got)
	}
	_, all := dryRoute(t, c, promptTokens(40))
	if len(all) != 2 {
		t.Fatalf("got %d candidates, want 2", len(all))
	}
}

// TestMixedFleetOneQuery: pod a publishes no events (approximate), pod b
// does (exact). One dry run answers for both, each marked as it is.
func TestMixedFleetOneQuery(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c := cellWithPods(t, pods, func(cfg *Config) {
		cfg.Pods[0].Events = PodEventsNone
		cfg.Speculative.TTL = 0 // only what events and first tokens say
	})
	toks := promptTokens(28)
	holdPrefix(t, c, "b", toks, 20) // b's events: 20 blocks
	// a gets the request (b would cost 44 blocks of prefill; a, cold, 64:
	// send it to a by draining b for the moment).
	post := func(path, body string) {
		resp, err := http.Post("http://"+c.HTTPAddr()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/v1/cell/pods/b:drain", "{}")
	c.router.invalidate()
	if resp, _ := completion(t, "http://"+c.HTTPAddr(), toks[:40*16], false, nil); resp.Header.Get(PodHeader) != "a" {
		t.Fatalf("the request went to %s, want a (b draining)", resp.Header.Get(PodHeader))
	}
	post("/v1/cell/pods/b:drain", `{"cancel": true}`)
	c.router.invalidate()
	_, all := dryRoute(t, c, toks)
	if a := all["a"]; a.MatchedBlocks != 40 || !a.Approximate {
		t.Errorf("pod a got %+v, want 40 approximate blocks", a)
	}
	if b := all["b"]; b.MatchedBlocks != 20 || b.Approximate || b.SpeculativeBlocks != 0 {
		t.Errorf("pod b got %+v, want 20 exact blocks", b)
	}
}

// TestApproximatePodLearnsNothingFromAnError: a pod without events that
// answers with an error computed nothing, so the cell learns nothing.
func TestApproximatePodLearnsNothingFromAnError(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a")}
	pods[0].fail = true
	c := cellWithPods(t, pods, func(cfg *Config) {
		cfg.Approximate.DefaultPodEvents = PodEventsNone
		cfg.Speculative.TTL = 0
	})
	toks := promptTokens(29)
	if resp, _ := completion(t, "http://"+c.HTTPAddr(), toks, false, nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("got status %d, want the pod's 503", resp.StatusCode)
	}
	if pick, _ := dryRoute(t, c, toks); pick.MatchedBlocks != 0 {
		t.Fatalf("after an error answer the pod matched %d blocks, want 0", pick.MatchedBlocks)
	}
	pods[0].mu.Lock()
	pods[0].fail = false
	pods[0].mu.Unlock()
	completion(t, "http://"+c.HTTPAddr(), toks, false, nil)
	if pick, _ := dryRoute(t, c, toks); pick.MatchedBlocks != 64 {
		t.Fatalf("after a good answer the pod matched %d blocks, want 64", pick.MatchedBlocks)
	}
}
