package cell

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// eppCell starts a cell with pods and its Endpoint Picker on 127.0.0.1:0,
// and returns it with a client of the picker.
func eppCell(t *testing.T, pods []*fakePod, mod func(*Config)) (*Cell, extprocv3.ExternalProcessorClient) {
	t.Helper()
	c := cellWithPods(t, pods, func(cfg *Config) {
		cfg.EPPAddr = "127.0.0.1:0"
		if mod != nil {
			mod(cfg)
		}
	})
	cc, err := grpc.NewClient(c.EPPAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return c, extprocv3.NewExternalProcessorClient(cc)
}

// holdAt makes pod hold the first blocks of toks as holdPrefix does, with
// the pod's next sequence number (a batch repeating one is dropped).
func holdAt(t testing.TB, c *Cell, seqs map[string]uint64, pod string, toks []uint32, blocks int) {
	t.Helper()
	h := blockhash.DefaultHasher()
	engine := h.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
	hashes := make([]uint64, blocks)
	for i := range hashes {
		hashes[i] = uint64(engine[i])
	}
	b := &events.Batch{Pod: pod, Model: "m", DPRank: -1, Seq: seqs[pod], Events: []events.Event{{
		Kind: events.KindBlockStored, BlockHashes: hashes, TokenIDs: toks[:blocks*16], BlockSize: 16}}}
	seqs[pod]++
	if err := c.Applier().ApplyBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	c.router.invalidate()
}

// podAt maps addresses to pod ids.
func podAt(pods []*fakePod) map[string]string {
	m := map[string]string{}
	for _, p := range pods {
		m[p.addr()] = p.id
	}
	return m
}

// idle waits until no pod carries load (every exchange finished).
func idle(t *testing.T, c *Cell, pods []*fakePod) {
	t.Helper()
	waitFor(t, "every pod's load freed", func() bool {
		for _, p := range pods {
			if c.router.tracker.Usage(p.id).Requests != 0 {
				return false
			}
		}
		return true
	})
}

// TestEPPPickEqualsProxyMode plays a gateway against a real cell with
// simulated pods, for completions, streamed completions and chat: the
// picker's pick and fallbacks follow the index (the deepest prefix first),
// its pick is the pod proxy mode sends the same request to in the same
// index state, the gateway's calls reach that pod with the body unchanged,
// and the response carries the cell's headers.
func TestEPPPickEqualsProxyMode(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b"), newFakePod(t, "c")}
	c, client := eppCell(t, pods, func(cfg *Config) {
		cfg.Routing.TokenizerJSON, cfg.Routing.ChatTemplate = fixtureTokenizer, "chatml"
	})
	at := podAt(pods)
	seqs := map[string]uint64{}
	for i, stream := range []bool{false, true} {
		toks := promptTokens(uint32(40 + i))
		holdAt(t, c, seqs, "b", toks, 40)
		holdAt(t, c, seqs, "c", toks, 20)
		body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 16, "stream": stream})
		out, err := epptest.Do(context.Background(), client, epptest.Call{Method: "POST", Path: "/v1/completions",
			Header: http.Header{"Content-Type": {"application/json"}}, Body: body, Frames: 5, ResponseTrailers: stream})
		if err != nil {
			t.Fatal(err)
		}
		if out.Immediate != nil {
			t.Fatalf("stream %v: immediate %d %s", stream, out.Immediate.GetStatus().GetCode(), out.Immediate.GetBody())
		}
		var order []string
		for _, ep := range out.Destinations() {
			order = append(order, at[ep])
		}
		if want := []string{"b", "c", "a"}; !slices.Equal(order, want) || out.Destination != out.MetadataDestination {
			t.Fatalf("stream %v: destinations %v (metadata %q), want %v", stream, order, out.MetadataDestination, want)
		}
		if string(out.Forwarded) != string(body) || out.Status != 200 || out.Served != pods[1].addr() {
			t.Fatalf("stream %v: forwarded %d of %d bytes, status %d served %s", stream, len(out.Forwarded), len(body), out.Status, out.Served)
		}
		if out.ResponseSetHeaders[strings.ToLower(PodHeader)] != "b" || out.ResponseSetHeaders[strings.ToLower(CellIDHeader)] != c.cfg.CellID ||
			out.SetHeaders[strings.ToLower(CacheHintHeader)] == "" {
			t.Fatalf("stream %v: response headers %v request headers %v", stream, out.ResponseSetHeaders, out.SetHeaders)
		}
		if stream && !strings.Contains(string(out.Response), "b-2") || !stream && !strings.Contains(string(out.Response), "hello from b") {
			t.Fatalf("stream %v: response %q", stream, out.Response)
		}
		if got := pods[1].last().header.Get(PodSetVersionHeader); got == "" {
			t.Fatalf("the pod got no %s", PodSetVersionHeader)
		}
		idle(t, c, pods)
		resp, _ := completion(t, "http://"+c.HTTPAddr(), toks, stream, nil)
		if got := resp.Header.Get(PodHeader); got != order[0] {
			t.Fatalf("stream %v: proxy mode sent the request to %s, the picker to %s", stream, got, order[0])
		}
	}

	// Chat, tokenized by the cell: proxy mode first, the picker follows
	// the blocks that call left (speculative entries).
	chat := `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"` + strings.Repeat("Where does the router send this chat? ", 20) + `"}],"stream":true}`
	resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/chat/completions", "application/json", strings.NewReader(chat))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	proxyPod := resp.Header.Get(PodHeader)
	idle(t, c, pods)
	out, err := epptest.Do(context.Background(), client, epptest.Call{Method: "POST", Path: "/v1/chat/completions", Body: []byte(chat), Frames: 3})
	if err != nil {
		t.Fatal(err)
	}
	if out.Immediate != nil || at[out.Destinations()[0]] != proxyPod || out.ResponseSetHeaders[strings.ToLower(PodHeader)] != proxyPod {
		t.Fatalf("chat: picker chose %v (immediate %v), proxy mode %s", out.Destinations(), out.Immediate, proxyPod)
	}
	if got := metric(t, c, "cellrouter_epp_picks_total"); got != 3 {
		t.Fatalf("cellrouter_epp_picks_total %v, want 3", got)
	}
}

// TestEPPFollowsTheResponse checks the call bookkeeping the gateway's
// reports drive, as proxy mode's hooks do: load from the pick to the end,
// the first token, a fallback that served, and a cancellation mid-stream
// that frees the load and reaches the pod.
func TestEPPFollowsTheResponse(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	c, client := eppCell(t, pods, nil)
	toks := promptTokens(50)
	holdPrefix(t, c, "a", toks, 30)
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 16, "stream": true})

	// The gateway reports that the fallback (b) served: b carries the
	// call, a retry is counted, the speculative blocks are b's too.
	ttft0 := metric(t, c, "cellrouter_time_to_first_byte_seconds_count")
	out, err := epptest.Do(context.Background(), client, epptest.Call{Method: "POST", Path: "/v1/completions", Body: body, ServedOverride: pods[1].addr()})
	if err != nil {
		t.Fatal(err)
	}
	if at := podAt(pods); at[out.Destinations()[0]] != "a" || out.ResponseSetHeaders[strings.ToLower(PodHeader)] != "b" {
		t.Fatalf("pick %v, response pod header %q: want a picked and b reported", out.Destinations(), out.ResponseSetHeaders[strings.ToLower(PodHeader)])
	}
	idle(t, c, pods)
	if got := metric(t, c, "cellrouter_upstream_retries_total"); got != 1 {
		t.Fatalf("retries %v, want 1", got)
	}
	if got := metric(t, c, "cellrouter_time_to_first_byte_seconds_count"); got != ttft0+1 {
		t.Fatalf("first bytes %v, want %v", got, ttft0+1)
	}
	if got := metric(t, c, "cellrouter_upstream_responses_total", `leg="single"`, `status="2xx"`); got != 1 {
		t.Fatalf("2xx upstream responses %v, want 1", got)
	}
	_, all := dryRoute(t, c, toks)
	if all["b"].MatchedBlocks != 64 || all["b"].SpeculativeBlocks != 64 {
		t.Fatalf("b after serving: %+v, want 64 speculative blocks", all["b"])
	}

	// Cancellation mid-stream: the pod holds the stream open; the load is
	// held until the gateway goes away, then freed.
	for _, p := range pods {
		p.mu.Lock()
		p.hold = true
		p.mu.Unlock()
	}
	done := make(chan error, 1)
	var held *epptest.Outcome
	go func() {
		var err error
		held, err = epptest.Do(context.Background(), client, epptest.Call{Method: "POST", Path: "/v1/completions", Body: body, Frames: 2, CancelAfter: 1})
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !held.Cancelled {
		t.Fatal("the call was not cancelled")
	}
	served := podAt(pods)[held.Served]
	var pod *fakePod
	for _, p := range pods {
		if p.id == served {
			pod = p
		}
	}
	waitFor(t, "the pod to see the cancellation", func() bool {
		select {
		case <-pod.cancelled:
			return true
		default:
			return false
		}
	})
	idle(t, c, pods)
	if got := metric(t, c, "cellrouter_requests_in_flight"); got != 0 {
		t.Fatalf("in flight after the cancel: %v", got)
	}
}

// TestEPPSubsetAndRefusals checks the subset hint (a pick only from it, 503
// when it holds no pod) and the refusals in OpenAI's shape.
func TestEPPSubsetAndRefusals(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b"), newFakePod(t, "c")}
	c, client := eppCell(t, pods, func(cfg *Config) { cfg.Routing.MaxBodyBytes = 64 << 10 })
	toks := promptTokens(60)
	holdPrefix(t, c, "a", toks, 50)
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks})
	out, err := epptest.Do(context.Background(), client, epptest.Call{Method: "POST", Path: "/v1/completions", Body: body,
		Subset: []string{pods[1].addr(), pods[2].addr()}, NoUpstream: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := out.Destinations(); len(d) != 2 || slices.Contains(d, pods[0].addr()) {
		t.Fatalf("subset {b, c}: destinations %v", d)
	}
	for _, tc := range []struct {
		name   string
		call   epptest.Call
		status int
	}{
		{"subset without a pod", epptest.Call{Method: "POST", Path: "/v1/completions", Body: body, Subset: []string{"10.9.9.9:8000"}}, 503},
		{"empty subset", epptest.Call{Method: "POST", Path: "/v1/completions", Body: body, Subset: []string{}}, 503},
		{"unknown model", epptest.Call{Method: "POST", Path: "/v1/completions", Body: []byte(`{"model":"nope","prompt":"x"}`)}, 404},
		{"bad body", epptest.Call{Method: "POST", Path: "/v1/chat/completions", Body: []byte(`{"model":"m","messages":[]}`)}, 400},
		{"too large", epptest.Call{Method: "POST", Path: "/v1/completions", Body: []byte(`{"model":"m","prompt":"` + strings.Repeat("x", 70<<10) + `"}`), Frames: 3}, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := epptest.Do(context.Background(), client, tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if out.Immediate == nil || int(out.Immediate.GetStatus().GetCode()) != tc.status {
				t.Fatalf("got %v, want an immediate %d", out.Immediate, tc.status)
			}
			var e struct {
				Error map[string]json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(out.Immediate.GetBody(), &e); err != nil || e.Error["message"] == nil || e.Error["type"] == nil {
				t.Fatalf("body %s is not OpenAI's error shape", out.Immediate.GetBody())
			}
		})
	}
	_ = c
}

// TestEPPAgainstNaiveModel checks the pick, the fallbacks and the subset
// against a naive model over random index states: with no load, the
// order is the pods of the subset by matched depth, deepest first, and no
// pod of the subset is 503.
func TestEPPAgainstNaiveModel(t *testing.T) {
	var pods []*fakePod
	for i := range 6 {
		pods = append(pods, newFakePod(t, fmt.Sprintf("p%d", i)))
	}
	c, client := eppCell(t, pods, nil)
	at := podAt(pods)
	seqs := map[string]uint64{}
	rng := rand.New(rand.NewPCG(7, 27))
	for round := range 40 {
		toks := promptTokens(uint32(1000 + round))
		// Distinct depths, some pods holding nothing (depth 0, one at most
		// in the subset so that the order is strict).
		depths := rng.Perm(65)[:len(pods)]
		var subset []string
		for i, p := range pods {
			if depths[i] > 0 {
				holdAt(t, c, seqs, p.id, toks, depths[i])
			}
			if rng.IntN(3) > 0 {
				subset = append(subset, p.addr())
			}
		}
		var want []string
		for i, p := range pods {
			if slices.Contains(subset, p.addr()) {
				want = append(want, p.id)
			}
			_ = i
		}
		depthOf := map[string]int{}
		for i, p := range pods {
			depthOf[p.id] = depths[i]
		}
		sort.Slice(want, func(i, j int) bool { return depthOf[want[i]] > depthOf[want[j]] })
		body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks})
		idle(t, c, pods)
		out, err := epptest.Do(context.Background(), client, epptest.Call{Method: "POST", Path: "/v1/completions", Body: body,
			Subset: subset, NoUpstream: true, Frames: 1 + rng.IntN(4)})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			if out.Immediate == nil || out.Immediate.GetStatus().GetCode() != 503 {
				t.Fatalf("round %d: empty subset answered %v, want 503", round, out.Destinations())
			}
			continue
		}
		var got []string
		for _, ep := range out.Destinations() {
			got = append(got, at[ep])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: depths %v subset %v: got %v, want %v", round, depthOf, subset, got, want)
		}
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEPPDecision is one picker-mode decision end to end on a real
// cell: the gateway's stream (headers, a 64-block prompt in 3 frames), the
// plan among 16 pods holding prefixes of it, the answer, the stream's end.
// cpu-us/decision is the whole process's CPU (the client's share
// included) per decision; BenchmarkProxyDecision is the same request in
// proxy mode, the pod's answer included.
func BenchmarkEPPDecision(b *testing.B) {
	_, client, body := benchCell(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for b.Loop() {
		out, err := epptest.Do(context.Background(), client, epptest.Call{Method: "POST", Path: "/v1/completions", Body: body, Frames: 3, NoUpstream: true})
		if err != nil || out.Immediate != nil {
			b.Fatalf("%v %v", err, out.Immediate)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/decision")
}

// BenchmarkProxyDecision is BenchmarkEPPDecision's request through proxy
// mode (the fake pod's answer relayed).
func BenchmarkProxyDecision(b *testing.B) {
	c, _, body := benchCell(b)
	url := "http://" + c.HTTPAddr() + "/v1/completions"
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for b.Loop() {
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/decision")
}

func benchCell(b *testing.B) (*Cell, extprocv3.ExternalProcessorClient, []byte) {
	var pods []*fakePod
	for i := range 16 {
		pods = append(pods, newFakePod(b, fmt.Sprintf("p%d", i)))
	}
	cfg := testConfig()
	cfg.EPPAddr = "127.0.0.1:0"
	for _, p := range pods {
		cfg.Pods = append(cfg.Pods, PodConfig{ID: p.id, Address: p.addr(), KVBlocks: 10000})
	}
	c, stop := runCellB(b, cfg)
	b.Cleanup(stop)
	toks := promptTokens(77)
	seqs := map[string]uint64{}
	for i, p := range pods {
		if i > 0 {
			holdAt(b, c, seqs, p.id, toks, 4*i)
		}
	}
	cc, err := grpc.NewClient(c.EPPAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 16})
	return c, extprocv3.NewExternalProcessorClient(cc), body
}
