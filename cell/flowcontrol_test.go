package cell

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/tlsconf/tlstest"
)

// slowPod is a simulated engine that serves one completion at a time,
// each taking service (its compute) or, with gate set, until the test
// sends on gate; it counts what reached it, by tenant, and records the
// first prompt token of each completion, in order of arrival.
type slowPod struct {
	id      string
	srv     *httptest.Server
	service time.Duration
	gate    chan struct{} // nil: no gate

	mu       sync.Mutex // the engine's one slot
	countMu  sync.Mutex
	received map[string]int // by tenant header
	first    []string       // first prompt tokens
}

// firstToken finds a completion body's first prompt token.
var firstToken = regexp.MustCompile(`"prompt":\[(\d+)`)

func newSlowPod(t *testing.T, id string, service time.Duration, gate chan struct{}) *slowPod {
	p := &slowPod{id: id, service: service, gate: gate, received: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *slowPod) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","created":1700000000,"owned_by":%q}]}`, p.id)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/v1/") {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	p.countMu.Lock()
	p.received[r.Header.Get("X-Cellrouter-Tenant")]++
	if m := firstToken.FindSubmatch(body); m != nil {
		p.first = append(p.first, string(m[1]))
	}
	p.countMu.Unlock()
	p.mu.Lock()
	if p.gate != nil {
		select {
		case <-p.gate:
		case <-r.Context().Done():
		}
	} else {
		time.Sleep(p.service) // the engine's compute, not synchronisation
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"c","object":"text_completion","choices":[{"text":"ok","index":0}],"usage":{"prompt_tokens":64,"completion_tokens":16}}`)
}

// has reports whether a completion whose prompt starts with first reached
// the pod.
func (p *slowPod) has(first int) bool {
	return slices.Contains(p.seen(), strconv.Itoa(first))
}

// seen returns the first prompt tokens of what reached the pod so far.
func (p *slowPod) seen() []string {
	p.countMu.Lock()
	defer p.countMu.Unlock()
	return slices.Clone(p.first)
}

func (p *slowPod) count() int {
	p.countMu.Lock()
	defer p.countMu.Unlock()
	n := 0
	for _, v := range p.received {
		n += v
	}
	return n
}

// flowCell runs a cell with API keys over plain HTTP in front of pod,
// flow control on with one request in flight per pod.
func flowCell(t *testing.T, pod *slowPod, mod func(*Config)) *Cell {
	t.Helper()
	dir := t.TempDir()
	f := "tenants:\n" +
		"  - {name: noisy}\n  - {name: quiet}\n" +
		"  - {name: gold, priority: critical}\n  - {name: batch, priority: sheddable}\n" +
		"  - {name: impatient, max_queue_wait: 150ms}\n  - {name: heavy, weight: 3}\nkeys:\n"
	for _, ten := range []string{"noisy", "quiet", "gold", "batch", "impatient", "heavy"} {
		f += "  - {sha256: " + auth.HashKey(ten+"-key").String() + ", tenant: " + ten + ", scopes: [inference]}\n"
	}
	keys := filepath.Join(dir, "keys.yaml")
	tlstest.Write(t, keys, []byte(f))
	cfg := flowCellConfig(pod)
	cfg.Auth.KeyFile = keys
	if mod != nil {
		mod(&cfg)
	}
	c := startCell(t, cfg)
	waitFor(t, "the pod's model", func() bool { return c.modelServed("m") })
	return c
}

// flowCellConfig is testConfig in front of pods, without engine metrics, flow
// control on with one request in flight per pod and rechecking often.
func flowCellConfig(pods ...*slowPod) Config {
	cfg := testConfig()
	cfg.Pods = nil
	for _, p := range pods {
		cfg.Pods = append(cfg.Pods, PodConfig{ID: p.id, Address: strings.TrimPrefix(p.srv.URL, "http://"), KVBlocks: 10000})
	}
	cfg.EngineMetrics.Enabled = false
	cfg.FlowControl.MaxInflightPerPod = 1
	cfg.FlowControl.QueueDepthThreshold = 0
	cfg.FlowControl.ActiveBlocksThreshold = 0
	cfg.FlowControl.RecheckInterval = 5 * time.Millisecond
	return cfg
}

// flowRequest sends one completion as tenant's key and returns the
// status, the headers, the body and the time it took.
func flowRequest(ctx context.Context, base, tenant string, hdr map[string]string) (int, http.Header, string, time.Duration, error) {
	body := `{"model":"m","prompt":[1,2,3,4,5,6,7,8],"max_tokens":16}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tenant+"-key")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), time.Since(start), nil
}

// TestFlowNoisyTenantDoesNotPushQuiet runs a noisy tenant with many
// requests always outstanding and a quiet one sending one at a time
// against a pod that serves one request at a time: with flow control the
// quiet tenant's requests wait for about one request of the noisy
// tenant's, not for its whole backlog, and every request is answered
// once.
func TestFlowNoisyTenantDoesNotPushQuiet(t *testing.T) {
	const service = 10 * time.Millisecond
	const noisyClients = 12
	run := func(t *testing.T, enabled bool) (quiet, noisy time.Duration) {
		pod := newSlowPod(t, "pod-a", service, nil)
		c := flowCell(t, pod, func(cfg *Config) { cfg.FlowControl.Enabled = enabled })
		base := "http://" + c.HTTPAddr()
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var mu sync.Mutex
		var noisySum time.Duration
		noisyN := 0
		sent := 0
		for range noisyClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					code, _, body, took, err := flowRequest(ctx, base, "noisy", nil)
					if err != nil {
						return // stopped
					}
					mu.Lock()
					sent++
					if code != 200 {
						t.Errorf("noisy: %d %s", code, body)
					}
					noisySum += took
					noisyN++
					mu.Unlock()
				}
			}()
		}
		// Let the noisy tenant's backlog build.
		waitFor(t, "the noisy backlog", func() bool { mu.Lock(); defer mu.Unlock(); return noisyN >= noisyClients })
		var quietSum time.Duration
		const quietN = 10
		for range quietN {
			code, _, body, took, err := flowRequest(context.Background(), base, "quiet", nil)
			if err != nil || code != 200 {
				t.Fatalf("quiet: %d %s %v", code, body, err)
			}
			quietSum += took
		}
		stop()
		wg.Wait()
		if enabled {
			// Every quiet request was served 64 prompt and 16 output tokens
			// (the pod's usage), counted against its tenant.
			_, metrics := getAdminMetrics(t, c)
			if want := fmt.Sprintf(`cellrouter_flow_served_tokens_total{cell="cell-0",tenant="quiet"} %d`, quietN*80); !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "cellrouter_flow_served"))
			}
			// The stopped clients' requests leave as the cell sees them go.
			waitFor(t, "the queue to empty", func() bool { return c.flow.Stats().Queued == [auth.NumPriorities]int{} })
			if got, want := pod.count(), sent+quietN; got < want {
				t.Errorf("the pod saw %d requests, the clients had %d answered", got, want)
			}
		}
		return quietSum / quietN, noisySum / time.Duration(noisyN)
	}
	quietOn, noisyOn := run(t, true)
	quietOff, noisyOff := run(t, false)
	t.Logf("flow control on: quiet mean %v, noisy mean %v; off: quiet %v, noisy %v", quietOn, noisyOn, quietOff, noisyOff)
	// Fair share puts the quiet tenant behind about one noisy request (and
	// the one in service); the noisy tenant waits for its own backlog.
	if quietOn*5/2 > noisyOn {
		t.Errorf("with flow control the quiet tenant's mean latency %v is not well under the noisy one's %v", quietOn, noisyOn)
	}
}

// TestFlowSharesFollowWeights keeps two tenants of weights 1 and 3
// backlogged against a pod that serves one request at a time and checks
// that the pod serves them in the ratio of their weights (within 10% of
// each share), the fair share by tokens served.
func TestFlowSharesFollowWeights(t *testing.T) {
	pod := newSlowPod(t, "pod-a", 2*time.Millisecond, nil)
	c := flowCell(t, pod, nil)
	base := "http://" + c.HTTPAddr()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, ten := range []string{"noisy", "heavy"} {
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if code, _, body, _, err := flowRequest(ctx, base, ten, nil); err == nil && code != 200 {
						t.Errorf("%s: %d %s", ten, code, body)
					}
				}
			}()
		}
	}
	// Both tenants are backlogged once each has a request at the pod;
	// count from there.
	waitFor(t, "both tenants served", func() bool {
		pod.countMu.Lock()
		defer pod.countMu.Unlock()
		return pod.received["noisy"] > 0 && pod.received["heavy"] > 0
	})
	pod.countMu.Lock()
	base0 := map[string]int{"noisy": pod.received["noisy"], "heavy": pod.received["heavy"]}
	pod.countMu.Unlock()
	waitFor(t, "200 requests served", func() bool { return pod.count()-base0["noisy"]-base0["heavy"] >= 200 })
	pod.countMu.Lock()
	noisy, heavy := pod.received["noisy"]-base0["noisy"], pod.received["heavy"]-base0["heavy"]
	pod.countMu.Unlock()
	stop()
	wg.Wait()
	share := float64(heavy) / float64(heavy+noisy)
	t.Logf("served: heavy (weight 3) %d, noisy (weight 1) %d: heavy's share %.3f, want 0.75", heavy, noisy, share)
	if share < 0.75*0.9 || share > 0.75*1.1 {
		t.Errorf("heavy's share %.3f: want 0.75 within 10%%", share)
	}
}

// TestFlowDeadlineAnswers429 holds the pod's only slot and checks that a
// request of a tenant with max_queue_wait 150ms gets 429 with Retry-After
// in OpenAI's error shape once it has waited that long, and that it never
// reached the pod.
func TestFlowDeadlineAnswers429(t *testing.T) {
	gate := make(chan struct{})
	pod := newSlowPod(t, "pod-a", 0, gate)
	c := flowCell(t, pod, nil)
	base := "http://" + c.HTTPAddr()
	first := make(chan int, 1)
	go func() {
		code, _, _, _, _ := flowRequest(context.Background(), base, "quiet", nil)
		first <- code
	}()
	waitFor(t, "the first request at the pod", func() bool { return pod.count() == 1 })
	code, hdr, body, took, err := flowRequest(context.Background(), base, "impatient", nil)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Error struct {
			Message, Type string
			Code          string
			Param         *string
		}
	}
	if code != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &e) != nil || e.Error.Type != "requests" || e.Error.Code != "queue_timeout" || e.Error.Message == "" {
		t.Fatalf("got %d %s, want 429 requests/queue_timeout", code, body)
	}
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After %q: want whole seconds, at least 1", hdr.Get("Retry-After"))
	}
	if took < 150*time.Millisecond {
		t.Errorf("answered after %v: want the tenant's 150ms wait first", took)
	}
	// The client's own timeout header is shorter than the tenant's.
	if code, _, body, _, _ := flowRequest(context.Background(), base, "quiet", map[string]string{flowcontrol.TimeoutHeader: "50ms"}); code != http.StatusTooManyRequests {
		t.Errorf("X-Cellrouter-Timeout 50ms: got %d %s, want 429", code, body)
	}
	if code, _, body, _, _ := flowRequest(context.Background(), base, "quiet", map[string]string{flowcontrol.TimeoutHeader: "soon"}); code != http.StatusBadRequest || !strings.Contains(body, "invalid_timeout") {
		t.Errorf("a bad X-Cellrouter-Timeout: got %d %s, want 400 invalid_timeout", code, body)
	}
	close(gate)
	if code := <-first; code != 200 {
		t.Errorf("the first request: got %d, want 200", code)
	}
	if n := pod.count(); n != 1 {
		t.Errorf("the pod saw %d requests: want only the first", n)
	}
	_, metrics := getAdminMetrics(t, c)
	for _, want := range []string{`cellrouter_flow_shed_total{band="standard",cell="cell-0",reason="deadline"} 1`,
		`cellrouter_flow_shed_total{band="standard",cell="cell-0",reason="client_deadline"} 1`,
		`cellrouter_flow_headroom_kept_total{cell="cell-0"} 0`,
		`cellrouter_flow_affinity_reordered_total{cell="cell-0"} 0`} { // one tenant alone keeps no headroom
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "cellrouter_flow_"))
		}
	}
}

// TestFlowDisconnectLeavesQueue checks that a queued request whose client
// goes away leaves the queue at once and never reaches the pod.
func TestFlowDisconnectLeavesQueue(t *testing.T) {
	gate := make(chan struct{})
	pod := newSlowPod(t, "pod-a", 0, gate)
	c := flowCell(t, pod, nil)
	base := "http://" + c.HTTPAddr()
	first := make(chan int, 1)
	go func() {
		code, _, _, _, _ := flowRequest(context.Background(), base, "quiet", nil)
		first <- code
	}()
	waitFor(t, "the first request at the pod", func() bool { return pod.count() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, _, _, _, err := flowRequest(ctx, base, "noisy", nil); done <- err }()
	waitFor(t, "the second request to queue", func() bool { return c.flow.Stats().Queued[auth.PriorityStandard.Index()] == 1 })
	cancel()
	<-done
	waitFor(t, "the queue to empty", func() bool { return c.flow.Stats().Queued[auth.PriorityStandard.Index()] == 0 })
	if n := c.flow.Stats().Left[auth.PriorityStandard.Index()][flowcontrol.OutcomeCancelled]; n != 1 {
		t.Errorf("cancelled: got %d, want 1", n)
	}
	close(gate)
	if code := <-first; code != 200 {
		t.Errorf("the first request: got %d", code)
	}
	if n := pod.count(); n != 1 {
		t.Errorf("the pod saw %d requests: want only the first", n)
	}
}

// TestFlowPriorityBands checks the bands end to end: a critical request
// leaves the queue before a sheddable one that came first, a key may
// lower its band with X-Cellrouter-Priority but not raise it, and a
// header that names no band is a 400.
func TestFlowPriorityBands(t *testing.T) {
	gate := make(chan struct{}, 16)
	pod := newSlowPod(t, "pod-a", 0, gate)
	c := flowCell(t, pod, nil)
	base := "http://" + c.HTTPAddr()
	if code, _, body, _, _ := flowRequest(context.Background(), base, "gold", map[string]string{auth.PriorityHeader: "urgent"}); code != 400 || !strings.Contains(body, "invalid_priority") {
		t.Fatalf("bad priority header: got %d %s, want 400 invalid_priority", code, body)
	}
	order := make(chan string, 8)
	send := func(tenant string, hdr map[string]string, label string) {
		go func() {
			code, h, body, _, _ := flowRequest(context.Background(), base, tenant, hdr)
			if code != 200 {
				t.Errorf("%s: %d %s", label, code, body)
			}
			if wait := h.Get(QueueWaitHeader); (wait != "") != (label != "holder") {
				t.Errorf("%s: %s %q: want it on the requests that waited", label, QueueWaitHeader, wait)
			}
			order <- label
		}()
	}
	send("quiet", nil, "holder")
	waitFor(t, "the holder at the pod", func() bool { return pod.count() == 1 })
	queued := func(b auth.Priority) func() bool {
		return func() bool { return c.flow.Stats().Queued[b.Index()] >= 1 }
	}
	send("batch", map[string]string{auth.PriorityHeader: "critical"}, "batch-raised") // may not raise: stays sheddable
	waitFor(t, "the sheddable request to queue", queued(auth.PrioritySheddable))
	send("gold", map[string]string{auth.PriorityHeader: "standard"}, "gold-lowered")
	waitFor(t, "the lowered request to queue", queued(auth.PriorityStandard))
	send("gold", nil, "gold")
	waitFor(t, "the critical request to queue", queued(auth.PriorityCritical))
	var got []string
	for range 4 {
		gate <- struct{}{}
		got = append(got, <-order)
	}
	want := []string{"holder", "gold", "gold-lowered", "batch-raised"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("answer order: got %v, want %v", got, want)
	}
}

// getAdminMetrics reads the cell's metrics from its registry (the key
// file of these tests names no admin key).
func getAdminMetrics(t *testing.T, c *Cell) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(c.promReg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Code, rec.Body.String()
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
