package cell

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/internal/decisions"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// routeOver posts a dry run to the cell's /v1/cell/route and decodes the
// answer.
func routeOver(t *testing.T, c *Cell, req *cellv1.RouteRequest) *cellv1.RouteResponse {
	t.Helper()
	b, _ := protojson.Marshal(req)
	resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/cell/route", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out cellv1.RouteResponse
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("route: %d %s", resp.StatusCode, raw)
	}
	if err := protojson.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// explainCell is a cell of three pods in a hand-built state: a holds 10
// blocks of the prompt, b 50, c 20 and c is drained. It learns nothing
// from its own routing (no speculative blocks), so that what the pods hold
// stays what the test says, and routes by the blocks cost (kv-cost, whose
// raw score the test can state in blocks).
func explainCell(t *testing.T, mod func(*Config)) (*Cell, []uint32) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b"), newFakePod(t, "c")}
	c := cellWithPods(t, pods, func(cfg *Config) {
		cfg.Speculative.TTL = 0
		cfg.Routing.Cost.Model = CostBlocks
		if mod != nil {
			mod(cfg)
		}
	})
	toks := promptTokens(5)
	holdPrefix(t, c, "a", toks, 10)
	holdPrefix(t, c, "b", toks, 50)
	holdPrefix(t, c, "c", toks, 20)
	resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/cell/pods/c:drain", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("drain c: %d", resp.StatusCode)
	}
	return c, toks
}

// TestRouteExplain checks the dry run's explanation against the dry run's
// own answer over a hand-built index: the explained pick is the response's
// pick, every pod is there with its matched and prefill blocks, the drained
// pod names the filter that dropped it and why, and the raw kv-cost score
// is the cost the response reports.
func TestRouteExplain(t *testing.T) {
	c, toks := explainCell(t, nil)
	resp := routeOver(t, c, &cellv1.RouteRequest{Model: "m", TokenIds: toks, Explain: true})
	x := resp.GetExplanation()
	if x == nil || len(x.GetPasses()) != 1 {
		t.Fatalf("explanation: got %v, want one pass", x)
	}
	if x.GetPick() != resp.GetPick().GetPod() || x.GetPick() != "b" {
		t.Errorf("pick: explanation %q, response %q, want b", x.GetPick(), resp.GetPick().GetPod())
	}
	if x.GetTotalBlocks() != resp.GetTotalBlocks() || x.GetTotalBlocks() != 64 {
		t.Errorf("total blocks: got %d, want 64", x.GetTotalBlocks())
	}
	pass := x.GetPasses()[0]
	if pass.GetProfile() != "default" || pass.GetPicker() != "softmax" || len(pass.GetScorers()) == 0 || pass.GetScorers()[0].GetType() != "kv-cost" {
		t.Errorf("pass: got %v, want the default profile", pass)
	}
	if len(pass.GetPods()) != 3 || pass.GetPodsTotal() != 3 {
		t.Fatalf("pods: got %d of %d, want 3 of 3", len(pass.GetPods()), pass.GetPodsTotal())
	}
	byPod := map[string]*cellv1.ExplainPod{}
	for _, p := range pass.GetPods() {
		byPod[p.GetPod()] = p
	}
	want := map[string]struct {
		matched uint32
		verdict string
		rank    uint32
	}{"b": {50, "kept", 1}, "a": {10, "kept", 2}, "c": {20, "filtered", 0}}
	for pod, w := range want {
		p := byPod[pod]
		if p.GetMatchedBlocks() != w.matched || p.GetPrefillBlocks() != 64-w.matched || p.GetVerdict() != w.verdict || p.GetRank() != w.rank {
			t.Errorf("pod %s: got %v, want matched %d, verdict %s, rank %d", pod, p, w.matched, w.verdict, w.rank)
		}
	}
	if p := byPod["c"]; p.GetFilter() != "healthy" || p.GetReason() != "draining" || !p.GetDraining() || p.GetScore() != 0 || len(p.GetScores()) != 0 {
		t.Errorf("drained pod: got %v, want dropped by healthy for draining, unscored", p)
	}
	if !byPod["b"].GetPicked() || byPod["a"].GetPicked() {
		t.Errorf("picked: b %v, a %v, want b only", byPod["b"].GetPicked(), byPod["a"].GetPicked())
	}
	// The explained score is the response's cost (its negation), and the
	// weighted sum of the raw scores; kv-cost's raw score is the reference
	// cost, prefill blocks plus active blocks (overlap weight 1, idle pods),
	// plus the pressure: the blocks the pod is expected to evict, which the
	// response carries as evict_blocks (pressure weight 1).
	for _, cand := range resp.GetCandidates() {
		p := byPod[cand.GetPod()]
		if -p.GetScore() != cand.GetCost() || len(p.GetScores()) != len(pass.GetScorers()) {
			t.Errorf("pod %s: explained score %v, response cost %v", cand.GetPod(), p.GetScore(), cand.GetCost())
			continue
		}
		sum := 0.0
		for i, sc := range p.GetScores() {
			sum += pass.GetScorers()[i].GetWeight() * sc.GetRaw()
		}
		if sum != p.GetScore() {
			t.Errorf("pod %s: weighted raw scores %v, score %v", cand.GetPod(), sum, p.GetScore())
		}
		if raw := p.GetScores()[0].GetRaw(); raw != -(float64(p.GetPrefillBlocks()+p.GetActiveBlocks())+cand.GetEvictBlocks()) || cand.GetEvictBlocks() <= 0 {
			t.Errorf("pod %s: kv-cost %v, want -(prefill %d + active %d + evict %v), evict > 0", cand.GetPod(), raw, p.GetPrefillBlocks(), p.GetActiveBlocks(), cand.GetEvictBlocks())
		}
	}
}

// TestRouteWithoutExplain checks that explain off leaves the dry run's
// answer as it was: no explanation, and the same answer as an explained
// run without its explanation.
func TestRouteWithoutExplain(t *testing.T) {
	c, toks := explainCell(t, nil)
	plain := routeOver(t, c, &cellv1.RouteRequest{Model: "m", TokenIds: toks})
	if plain.Explanation != nil {
		t.Fatalf("explanation without explain: %v", plain.Explanation)
	}
	explained := routeOver(t, c, &cellv1.RouteRequest{Model: "m", TokenIds: toks, Explain: true})
	explained.Explanation = nil
	plain.DecisionNs, explained.DecisionNs = 0, 0
	if !proto.Equal(plain, explained) {
		t.Errorf("explain changed the answer:\n%v\n%v", plain, explained)
	}
}

// TestCellDecisionRing sends data-plane requests and reads them back from
// GET /v1/cell/decisions and /v1/cell/decisions/{id} and the Go
// accessors: the client's request id, the pod that answered, the matched
// blocks, the status, and the explanation captured at the decision (top K
// pods, the pick first, equal to the pod that served).
func TestCellDecisionRing(t *testing.T) {
	c, toks := explainCell(t, func(cfg *Config) { cfg.Decisions = decisions.Config{Size: 3, TopK: 1} })
	for i := 0; i < 5; i++ {
		resp, body := completion(t, "http://"+c.HTTPAddr(), toks, false, map[string]string{"X-Request-Id": fmt.Sprintf("req-%d", i)})
		if resp.StatusCode != 200 || resp.Header.Get(PodHeader) != "b" {
			t.Fatalf("request %d: %d from %q: %s", i, resp.StatusCode, resp.Header.Get(PodHeader), body)
		}
		// The next request must find b idle again (its load ends as the
		// handler returns, which may be after the client read the answer).
		waitFor(t, "pod b idle", func() bool { return c.router.tracker.Usage("b").Requests == 0 })
	}
	recent := c.RecentDecisions()
	if len(recent) != 3 || recent[0].ID != "req-4" || recent[2].ID != "req-2" {
		t.Fatalf("RecentDecisions: got %d, want req-4..req-2", len(recent))
	}
	if _, ok := c.Decision("req-1"); ok {
		t.Error("Decision(req-1): found a record the ring of 3 dropped")
	}
	rec, ok := c.Decision("req-3")
	if !ok || rec.Pod != "b" || rec.Cell != c.cfg.CellID || rec.Status != 200 || rec.MatchedBlocks != 50 || rec.Blocks != 64 ||
		rec.Path != sourceExact || rec.Model != "m" || rec.Duration <= 0 || rec.Time.IsZero() {
		t.Fatalf("Decision(req-3): got %+v", rec)
	}
	x, _ := rec.Explanation.(*cellv1.Explanation)
	if x == nil || x.GetPick() != "b" || len(x.GetPasses()[0].GetPods()) != 1 || x.GetPasses()[0].GetPodsTotal() != 3 ||
		x.GetPasses()[0].GetPods()[0].GetPod() != "b" {
		t.Errorf("captured explanation: got %v, want the pick b alone of 3 pods", x)
	}

	code, body := get(t, "http://"+c.HTTPAddr()+DecisionsPath)
	var list struct {
		Decisions []map[string]any `json:"decisions"`
		Size      int              `json:"size"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != 200 || list.Size != 3 || len(list.Decisions) != 3 {
		t.Fatalf("GET decisions: %d %s (%v)", code, body, err)
	}
	if d := list.Decisions[0]; d["id"] != "req-4" || d["pod"] != "b" || d["status"] != 200.0 || d["path"] != "exact" {
		t.Errorf("newest decision: got %v", d)
	}
	code, body = get(t, "http://"+c.HTTPAddr()+DecisionsPath+"/req-3")
	if code != 200 || !strings.Contains(body, `"id": "req-3"`) || !strings.Contains(body, `"pick": "b"`) {
		t.Errorf("GET decisions/req-3: %d %s", code, body)
	}
	code, body = get(t, "http://"+c.HTTPAddr()+DecisionsPath+"/req-0")
	if code != 404 || !strings.Contains(body, `"not_found"`) {
		t.Errorf("GET decisions/req-0: %d %s, want 404 not_found", code, body)
	}
}

// TestCellDecisionRingConcurrent records from concurrent requests while
// the ring is read (run with -race): it never holds more than its size and
// every record has its own id.
func TestCellDecisionRingConcurrent(t *testing.T) {
	c, toks := explainCell(t, func(cfg *Config) { cfg.Decisions = decisions.Config{Size: 8, TopK: 2} })
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				resp, _ := completion(t, "http://"+c.HTTPAddr(), toks, false, nil)
				if resp.StatusCode != 200 {
					t.Errorf("status %d", resp.StatusCode)
				}
				if n := len(c.RecentDecisions()); n > 8 {
					t.Errorf("%d records in a ring of 8", n)
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, r := range c.RecentDecisions() {
		if r.ID == "" || seen[r.ID] {
			t.Errorf("record id %q empty or repeated", r.ID)
		}
		seen[r.ID] = true
	}
	if len(seen) != 8 {
		t.Errorf("got %d records, want 8", len(seen))
	}
}

// TestCellDecisionsOff checks decisions.size 0: nothing is recorded and
// the endpoint answers an empty list.
func TestCellDecisionsOff(t *testing.T) {
	c, toks := explainCell(t, func(cfg *Config) { cfg.Decisions.Size = 0 })
	if resp, _ := completion(t, "http://"+c.HTTPAddr(), toks, false, nil); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := c.RecentDecisions(); len(got) != 0 {
		t.Errorf("RecentDecisions: got %d, want none", len(got))
	}
	if code, body := get(t, "http://"+c.HTTPAddr()+DecisionsPath); code != 200 || !strings.Contains(body, `"size": 0`) {
		t.Errorf("GET decisions: %d %s", code, body)
	}
}

// TestCellDecisionsAuth checks that the decisions are control plane: an
// admin key reads them, an inference key and no key do not, and no key
// appears in them.
func TestCellDecisionsAuth(t *testing.T) {
	s := startSecureCell(t, tlsconf.VerifyClientCertIfGiven)
	code, _, body, err := s.call(t, s.anon, "POST", "/v1/completions", `{"model":"m","prompt":[1,2,3],"max_tokens":1}`,
		map[string]string{"Authorization": "Bearer lab-key", "X-Request-Id": "auth-1"})
	if err != nil || code != 200 {
		t.Fatalf("completion: %d %s %v", code, body, err)
	}
	for _, tt := range []struct {
		name, key string
		want      int
	}{
		{"no key", "", 401},
		{"inference key", "lab-key", 403},
		{"admin key", "ops-key", 200},
	} {
		for _, path := range []string{DecisionsPath, DecisionsPath + "/auth-1"} {
			hdr := map[string]string{}
			if tt.key != "" {
				hdr["Authorization"] = "Bearer " + tt.key
			}
			code, _, body, err := s.call(t, s.anon, "GET", path, "", hdr)
			if err != nil || code != tt.want {
				t.Errorf("%s %s: got %d %s (%v), want %d", tt.name, path, code, body, err, tt.want)
			}
			if code == 200 {
				if !strings.Contains(body, `"tenant": "lab"`) || strings.Contains(body, "lab-key") || strings.Contains(body, "ops-key") {
					t.Errorf("%s %s: got %s, want tenant lab and no key", tt.name, path, body)
				}
			}
		}
	}
}

// TestDecisionsConfig checks the decisions section of celld's
// configuration: the defaults, and errors naming the field and value.
func TestDecisionsConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte("cell_id: c\n"))
	if err != nil || cfg.Decisions != decisions.DefaultConfig() {
		t.Fatalf("defaults: got %+v %v, want %+v", cfg.Decisions, err, decisions.DefaultConfig())
	}
	for _, tt := range []struct{ yaml, want string }{
		{"cell_id: c\ndecisions: {size: -1}\n", "decisions.size -1"},
		{"cell_id: c\ndecisions: {size: 10, top_k: 0}\n", "decisions.top_k 0"},
	} {
		if _, err := ParseConfig([]byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error naming %s", tt.yaml, err, tt.want)
		}
	}
	cfg, err = ParseConfig([]byte("cell_id: c\ndecisions: {size: 0}\n"))
	if err != nil || cfg.Decisions.Size != 0 {
		t.Errorf("size 0: got %+v %v, want the ring off", cfg.Decisions, err)
	}
}
