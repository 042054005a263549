package global

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/decisions"
)

// tableProber answers each cell's probe from a table (an error for a cell
// in fail), as a cell would: its pick, matched blocks, load and cost.
type tableProber struct {
	answers map[string]*cellv1.Candidate
	busy    map[string]bool
	fail    map[string]error
}

func (p tableProber) Probe(_ context.Context, c *CellView, _ *cellv1.RouteRequest) (*cellv1.RouteResponse, error) {
	if err := p.fail[c.ID]; err != nil {
		return nil, err
	}
	return &cellv1.RouteResponse{Pick: p.answers[c.ID], FailedOpen: p.busy[c.ID]}, nil
}

// explainCells is five cells in a hand-built state for a request of 16
// blocks: the summaries of cell-0 and cell-1 hold its first 16 and 8
// blocks, cell-2's holds nothing, cell-3 holds all 16 but is draining,
// cell-4 holds 4 and its probe fails.
func explainCells(t *testing.T) ([]CellView, []uint32) {
	t.Helper()
	toks := tokens(77, 16*16)
	chain := blockhash.DefaultHasher().Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
	held := []int{16, 8, 0, 16, 4}
	views := make([]CellView, len(held))
	for i, n := range held {
		bld, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
		if err != nil {
			t.Fatal(err)
		}
		for d, x := range chain[:n] {
			bld.Add(x, d+1)
		}
		s := bld.Build()
		views[i] = CellView{ID: fmt.Sprintf("cell-%d", i), HTTPAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2", Alive: true, Summary: s,
			SummaryGen: uint64(10 + i), Load: CellLoad{ActiveBlocks: 100 * i, ActiveRequests: i, Pods: 4, LeastPodBlocks: 3 * i}}
	}
	views[3].Draining = true
	return views, toks
}

// TestDecideExplained checks the global explanation against the decision
// it explains and against references: the summaries' estimates are what
// each summary answers for the chain, the probe fields are the probe's
// answer as received, the cost terms add up to Choose's formula, the
// ranks are the decision's order (the pick first), an unusable cell is no
// candidate, a failed probe says why.
func TestDecideExplained(t *testing.T) {
	views, toks := explainCells(t)
	pr := tableProber{
		answers: map[string]*cellv1.Candidate{"cell-0": {Pod: "p0", MatchedBlocks: 16, Load: 40, Cost: 40},
			"cell-1": {Pod: "p1", MatchedBlocks: 8, Load: 0, Cost: 8}},
		fail: map[string]error{"cell-4": errors.New("probe refused")},
	}
	cfg := DefaultConfig()
	cfg.Search.MaxProbes = 3
	cfg.ProbeTimeout = 5 * time.Second
	rt, err := NewRouter(cfg, StaticDirectory(views), pr)
	if err != nil {
		t.Fatal(err)
	}
	d, x, err := rt.DecideExplained(context.Background(), &Request{Model: "m", TokenIDs: toks})
	if err != nil {
		t.Fatal(err)
	}
	if x == nil || x.GetCell() != d.Views[d.Order[0]].ID || x.GetCell() != "cell-1" {
		t.Fatalf("explained pick: got %q, want the decision's %q (cell-1: 8 to prefill, idle pick)", x.GetCell(), d.Views[d.Order[0]].ID)
	}
	if x.GetPath() != "summary_tokens" || x.GetCold() || x.GetTotalBlocks() != 16 || x.GetCellsTotal() != 5 || len(x.GetCells()) != 5 {
		t.Errorf("explanation: got path %s cold %v blocks %d cells %d/%d", x.GetPath(), x.GetCold(), x.GetTotalBlocks(), len(x.GetCells()), x.GetCellsTotal())
	}
	chain := blockhash.DefaultHasher().Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
	byCell := map[string]*globalv1.ExplainCell{}
	for _, c := range x.GetCells() {
		byCell[c.GetCell()] = c
	}
	for i := range views {
		c, v := byCell[views[i].ID], &views[i]
		if want := v.Summary.Depth(chain); v.usable() && int(c.GetEstimatedBlocks()) != want {
			t.Errorf("%s: estimate %d, the summary says %d", v.ID, c.GetEstimatedBlocks(), want)
		}
		if c.GetGossipedActiveBlocks() != uint64(v.Load.ActiveBlocks) || c.GetGossipedLeastPodBlocks() != uint64(v.Load.LeastPodBlocks) ||
			c.GetSummaryGeneration() != v.SummaryGen || c.GetPods() != 4 {
			t.Errorf("%s: gossiped load %v, want %+v", v.ID, c, v.Load)
		}
		if r := slices.Index(d.Order, i); int(c.GetRank()) != r+1 || c.GetPicked() != (r == 0) {
			t.Errorf("%s: rank %d picked %v, decision order %v", v.ID, c.GetRank(), c.GetPicked(), d.Order)
		}
	}
	if c := byCell["cell-3"]; c.GetUsable() || !c.GetDraining() || c.GetCandidate() || c.GetProbed() || c.GetRank() != 0 {
		t.Errorf("draining cell-3: got %v, want unusable, no candidate, unranked", c)
	}
	for _, a := range d.Answers {
		c := byCell[views[a.Cell].ID]
		p := c.GetProbe()
		if !c.GetProbed() || !c.GetCandidate() || p == nil {
			t.Fatalf("%s: probed %v, want its answer", views[a.Cell].ID, c.GetProbed())
		}
		if p.GetPod() != a.Pod || int(p.GetMatchedBlocks()) != a.Matched || p.GetLoad() != a.Load || p.GetCost() != a.Cost ||
			p.GetRttMs() != float64(a.RTT)/1e6 || p.GetOpened() != a.Opened || int(p.GetCellBlocks()) != a.CellBlocks {
			t.Errorf("%s: explained probe %v, the decision's answer %+v", views[a.Cell].ID, p, a)
		}
		if want := pr.answers[views[a.Cell].ID]; want != nil && (p.GetPod() != want.GetPod() || p.GetMatchedBlocks() != want.GetMatchedBlocks()) {
			t.Errorf("%s: explained probe %v, the cell answered %v", views[a.Cell].ID, p, want)
		}
		if a.Err != nil {
			if p.GetError() != a.Err.Error() || c.GetCost() != 0 {
				t.Errorf("%s: failed probe explained as %v", views[a.Cell].ID, c)
			}
			continue
		}
		want := cfg.Choose.BlockWeight()*float64(16-a.Matched) + a.Load + cfg.Choose.RTTWeight*float64(a.Distance)/float64(time.Millisecond)
		if math.Abs(c.GetCost()-want) > 1e-9 || math.Abs(c.GetPrefillCost()+c.GetLoadCost()+c.GetDistanceCost()-c.GetCost()) > 1e-9 {
			t.Errorf("%s: cost %v = %v + %v + %v, want %v", views[a.Cell].ID, c.GetCost(), c.GetPrefillCost(), c.GetLoadCost(), c.GetDistanceCost(), want)
		}
		if c.GetRole() != roleChoice {
			t.Errorf("%s: role %q, want %q", views[a.Cell].ID, c.GetRole(), roleChoice)
		}
	}
	if p := byCell["cell-4"].GetProbe(); p.GetError() != "probe refused" {
		t.Errorf("cell-4: probe error %q, want the prober's", p.GetError())
	}
}

// TestDecideExplainedColdAndFallback checks the roles of an unprobed cold
// decision (Search.ProbeCold off): no summary knows the prompt, the two
// hashed cells are candidates, and the least loaded other cell is a
// fallback. (A probed cold decision is explained as any probed one:
// TestDecideExplainedColdProbed.)
func TestDecideExplainedColdAndFallback(t *testing.T) {
	views, _ := explainCells(t)
	cfg := DefaultConfig()
	cfg.Search.ProbeCold = false
	rt, err := NewRouter(cfg, StaticDirectory(views), tableProber{})
	if err != nil {
		t.Fatal(err)
	}
	d, x, err := rt.DecideExplained(context.Background(), &Request{Model: "m", TokenIDs: tokens(999, 16*16)})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Cold || !x.GetCold() || x.GetPath() != "cold_tokens" {
		t.Fatalf("cold: decision %v, explanation %v %q", d.Cold, x.GetCold(), x.GetPath())
	}
	roles := map[string]int{}
	for _, c := range x.GetCells() {
		if c.GetRank() > 0 {
			roles[c.GetRole()]++
		}
		if c.GetProbed() {
			t.Errorf("%s probed on the cold path", c.GetCell())
		}
	}
	if roles[roleCandidate] != len(d.Candidates) || roles[roleFallback] != len(d.Order)-len(d.Candidates) || roles[roleFallback] == 0 {
		t.Errorf("roles: got %v, want %d candidates and %d fallbacks", roles, len(d.Candidates), len(d.Order)-len(d.Candidates))
	}
}

// TestDecideExplainedColdProbed checks a probed cold decision (the
// default): the hashed cells are probed, their answers explained, and the
// choice is among them.
func TestDecideExplainedColdProbed(t *testing.T) {
	views, _ := explainCells(t)
	rt, err := NewRouter(DefaultConfig(), StaticDirectory(views), tableProber{})
	if err != nil {
		t.Fatal(err)
	}
	d, x, err := rt.DecideExplained(context.Background(), &Request{Model: "m", TokenIDs: tokens(999, 16*16)})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Cold || !x.GetCold() {
		t.Fatalf("cold: decision %v, explanation %v", d.Cold, x.GetCold())
	}
	probed := 0
	for _, c := range x.GetCells() {
		if c.GetProbed() {
			probed++
			if c.GetProbe() == nil {
				t.Errorf("%s probed without its answer", c.GetCell())
			}
		}
	}
	if probed == 0 || probed != len(d.Answers) {
		t.Errorf("probed %d cells, the decision has %d answers", probed, len(d.Answers))
	}
}

// TestGlobalRouteExplainOverHTTP checks /v1/global/route with explain over
// real cells: the explanation is there only when asked, the answer is
// otherwise the same, and the explained probe of the chosen cell is the
// cell's own dry-run answer.
func TestGlobalRouteExplainOverHTTP(t *testing.T) {
	hits := &sync.Map{}
	a, b := startTestCell(t, "cell-a", hits), startTestCell(t, "cell-b", hits)
	toks := tokens(31, 64*16)
	a.hold(t, "cell-a-pod1", toks, 40)
	b.hold(t, "cell-b-pod0", toks, 10)
	g := startGlobal(t, StaticDirectory{a.view(t), b.view(t)})
	route := func(explain bool) *globalv1.RouteResponse {
		body, _ := protojson.Marshal(&globalv1.RouteRequest{Model: "m", TokenIds: toks, Explain: explain})
		resp, err := http.Post("http://"+g.HTTPAddr()+"/v1/global/route", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || resp.StatusCode != 200 {
			t.Fatalf("route: %d %s %v", resp.StatusCode, raw, err)
		}
		var out globalv1.RouteResponse
		if err := protojson.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return &out
	}
	plain, explained := route(false), route(true)
	if plain.Explanation != nil {
		t.Fatalf("explanation without explain: %v", plain.Explanation)
	}
	x := explained.GetExplanation()
	if x.GetCell() != explained.GetCell() || x.GetCell() != "cell-a" {
		t.Fatalf("explained cell %q, response %q, want cell-a", x.GetCell(), explained.GetCell())
	}
	pick := x.GetCells()[0]
	if pick.GetCell() != "cell-a" || !pick.GetPicked() || pick.GetProbe().GetPod() != "cell-a-pod1" || pick.GetProbe().GetMatchedBlocks() != 40 {
		t.Errorf("explained pick: got %v, want cell-a's probe answer cell-a-pod1 at 40 blocks", pick)
	}
	conn, err := grpc.NewClient(a.c.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cellAnswer, err := cellv1.NewCellServiceClient(conn).Route(context.Background(), &cellv1.RouteRequest{Model: "m", TokenIds: toks, MaxCandidates: 1})
	if err != nil {
		t.Fatal(err)
	}
	if cellAnswer.GetPick().GetPod() != pick.GetProbe().GetPod() || cellAnswer.GetPick().GetMatchedBlocks() != pick.GetProbe().GetMatchedBlocks() {
		t.Errorf("probe explained %v, the cell answers %v", pick.GetProbe(), cellAnswer.GetPick())
	}
	// Besides the explanation and the timings, the answers are the same.
	explained.Explanation = nil
	for _, r := range []*globalv1.RouteResponse{plain, explained} {
		r.DecisionNs = 0
		for _, c := range r.Candidates {
			c.RttMs = 0
		}
	}
	if !proto.Equal(plain, explained) {
		t.Errorf("explain changed the answer:\n%v\n%v", plain, explained)
	}
}

// TestGlobalDecisionRing sends requests through the global tier and reads
// them back from GET /v1/global/decisions[/{id}] and the accessors: the
// request id (sent on to the cell, whose ring has the same id), the cell
// that served, the probe's pod, the status and the explanation captured.
func TestGlobalDecisionRing(t *testing.T) {
	hits := &sync.Map{}
	a, b := startTestCell(t, "cell-a", hits), startTestCell(t, "cell-b", hits)
	toks := tokens(41, 64*16)
	a.hold(t, "cell-a-pod1", toks, 40)
	b.hold(t, "cell-b-pod0", toks, 10)
	g := startGlobalWith(t, StaticDirectory{a.view(t), b.view(t)}, func(cfg *Config) { cfg.Decisions = decisions.Config{Size: 4, TopK: 1} })
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	for i := 0; i < 6; i++ {
		req, _ := http.NewRequest("POST", "http://"+g.HTTPAddr()+"/v1/completions", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", fmt.Sprintf("g-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
		// The next request must find cell-a's pod idle again (its load
		// ends as the cell's handler returns, which may be after the
		// client read the answer), or the choice may rightly go elsewhere.
		waitFor(t, "cell-a idle", func() bool { return cellIdle(t, a) })
	}
	recent := g.RecentDecisions()
	if len(recent) != 4 || recent[0].ID != "g-5" || recent[3].ID != "g-2" {
		t.Fatalf("RecentDecisions: got %d records, want g-5..g-2", len(recent))
	}
	rec, ok := g.Decision("g-4")
	if !ok || rec.Cell != "cell-a" || rec.Pod != "cell-a-pod1" || rec.MatchedBlocks != 40 || rec.Status != 200 ||
		rec.Path != "summary_tokens" || rec.Blocks != 64 || rec.Duration <= 0 {
		t.Fatalf("Decision(g-4): got %+v", rec)
	}
	x, _ := rec.Explanation.(*globalv1.Explanation)
	if x == nil || x.GetCell() != "cell-a" || len(x.GetCells()) != 1 || x.GetCellsTotal() != 2 || !x.GetCells()[0].GetPicked() {
		t.Errorf("captured explanation: got %v, want the pick cell-a alone of 2", x)
	}
	if cr, ok := a.c.Decision("g-4"); !ok || cr.Pod != "cell-a-pod1" {
		t.Errorf("the cell's record of g-4: %v %+v, want the same request id at the cell", ok, cr)
	}
	resp, err := http.Get("http://" + g.HTTPAddr() + DecisionsPath + "/g-4")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || got["id"] != "g-4" || got["cell"] != "cell-a" || got["explanation"] == nil {
		t.Errorf("GET decisions/g-4: %d %v %v", resp.StatusCode, got, err)
	}
	resp, err = http.Get("http://" + g.HTTPAddr() + DecisionsPath + "/g-0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET decisions/g-0: %d, want 404 (dropped from the ring)", resp.StatusCode)
	}
}

// TestGlobalDecisionsAuth checks that the global tier's decisions are
// control plane: an admin key reads them, an inference key and no key do
// not, and no key appears in them.
func TestGlobalDecisionsAuth(t *testing.T) {
	s := startSecureTier(t, nil)
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	hdr := bearer("lab-key")
	hdr["X-Request-Id"] = "auth-g"
	if code, _, body := s.call(t, "POST", "/v1/completions", tierCompletion, hdr); code != 200 {
		t.Fatalf("completion: %d %s", code, body)
	}
	for _, tt := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no key", nil, 401},
		{"inference key", bearer("lab-key"), 403},
		{"admin key", bearer("ops-key"), 200},
	} {
		for _, path := range []string{DecisionsPath, DecisionsPath + "/auth-g"} {
			code, _, body := s.call(t, "GET", path, "", tt.hdr)
			if code != tt.want {
				t.Errorf("%s %s: got %d %s, want %d", tt.name, path, code, body, tt.want)
			}
			if code == 200 && (!strings.Contains(body, `"tenant": "lab"`) || strings.Contains(body, "lab-key") || strings.Contains(body, "ops-key")) {
				t.Errorf("%s %s: got %s, want tenant lab and no key", tt.name, path, body)
			}
		}
	}
}

// BenchmarkServeInferenceDecisions is the lone candidate's hand-off
// through both tiers with the decision rings off and on (default size and
// top K at both tiers): what capturing a decision and its explanation
// costs a request. With them off the path is the one before the rings.
func BenchmarkServeInferenceDecisions(b *testing.B) {
	for _, size := range []int{0, decisions.DefaultConfig().Size} {
		b.Run(fmt.Sprintf("decisions=%d", size), func(b *testing.B) {
			hits := &sync.Map{}
			c := startTestCellWith(b, "cell-a", hits, func(cfg *cell.Config) { cfg.Decisions.Size = size })
			toks := tokens(51, 64*16)
			c.hold(b, "cell-a-pod1", toks, 32)
			g := startGlobalWith(b, StaticDirectory{c.view(b)}, func(cfg *Config) { cfg.Decisions.Size = size })
			body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer client.CloseIdleConnections()
			url := "http://" + g.HTTPAddr() + "/v1/completions"
			send := func() {
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			for i := 0; i < 100; i++ { // connections and pools warm
				send()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				send()
			}
		})
	}
}

// TestGlobalDecisionRingUnprobed checks the record of a lone candidate
// handed the request without a probe: the pod and matched blocks are the
// ones the cell reports, the explanation says unprobed and the role
// candidate.
func TestGlobalDecisionRingUnprobed(t *testing.T) {
	hits := &sync.Map{}
	a := startTestCell(t, "cell-a", hits)
	toks := tokens(43, 64*16)
	a.hold(t, "cell-a-pod1", toks, 24)
	g := startGlobal(t, StaticDirectory{a.view(t)})
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	req, _ := http.NewRequest("POST", "http://"+g.HTTPAddr()+"/v1/completions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "lone")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	rec, ok := g.Decision("lone")
	if !ok || resp.StatusCode != 200 || rec.Pod != "cell-a-pod1" || rec.Pod != resp.Header.Get(cellPodHeader) || rec.MatchedBlocks != 24 {
		t.Fatalf("Decision(lone): %v %+v (status %d)", ok, rec, resp.StatusCode)
	}
	x := rec.Explanation.(*globalv1.Explanation)
	if !x.GetUnprobed() || x.GetCells()[0].GetRole() != roleCandidate || x.GetCells()[0].GetProbed() {
		t.Errorf("explanation: got %v, want unprobed, cell-a a candidate", x)
	}
}

// cellIdle reports whether no pod of tc has a request in flight, from its
// GET /v1/cell/pods.
func cellIdle(t *testing.T, tc *testCell) bool {
	resp, err := http.Get("http://" + tc.c.HTTPAddr() + "/v1/cell/pods")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pods struct {
		Pods []struct {
			ActiveRequests int `json:"activeRequests"`
		} `json:"pods"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&pods); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Pods {
		if p.ActiveRequests > 0 {
			return false
		}
	}
	return true
}
