package global

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/tlsconf/tlstest"
)

// waitingView is a usable cell view announcing waits w at at.
func waitingView(id string, at time.Time, w gossip.BandWaits) CellView {
	v := CellView{ID: id, HTTPAddr: "127.0.0.1:1", Alive: true, WaitsAt: at}
	v.Load.Waits = w
	return v
}

// TestChooseChargesWaits: a cell that would make the request wait for its
// band pays WaitWeight blocks a millisecond, so a ready cell with less of
// the prefix wins over a waiting one with more, unless the prefix saves
// more than the wait costs; waits of another band, or older than MaxAge,
// cost nothing.
func TestChooseChargesWaits(t *testing.T) {
	now := time.Unix(1000, 0)
	cfg := DefaultBandsConfig()
	busy := gossip.BandWaits{0, 0, 200 * time.Millisecond}
	for _, tc := range []struct {
		name    string
		band    gossip.Band
		at      time.Time
		matched int // cell 0's match; cell 1 matches 10 of 1000
		want    int // the first cell
	}{
		{"waiting cell loses", gossip.BandSheddable, now, 100, 1},
		{"prefix outweighs the wait", gossip.BandSheddable, now, 300, 0},
		{"other band does not wait", gossip.BandStandard, now, 100, 0},
		{"stale waits ignored", gossip.BandSheddable, now.Add(-cfg.MaxAge - time.Second), 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := []CellView{waitingView("a", tc.at, busy), waitingView("b", tc.at, gossip.BandWaits{})}
			answers := []ProbeAnswer{{Cell: 0, Matched: tc.matched}, {Cell: 1, Matched: 10}}
			chargeWaits(cfg, answers, views, tc.band, now)
			if got := Choose(DefaultChooseConfig(), answers, 1000)[0]; got != tc.want {
				t.Fatalf("first cell %d (answers %+v), want %d", got, answers, tc.want)
			}
		})
	}
}

// TestPreferReady: an unprobed order keeps its cells that can take the
// band now first, in their order, then the waiting ones by their wait; a
// zero WaitWeight leaves it alone.
func TestPreferReady(t *testing.T) {
	now := time.Unix(1000, 0)
	w := func(d time.Duration) gossip.BandWaits { return gossip.BandWaits{gossip.BandStandard: d} }
	views := []CellView{waitingView("a", now, w(3*time.Second)), waitingView("b", now, w(0)),
		waitingView("c", now, w(time.Second)), waitingView("d", now, w(0))}
	got := preferReady(DefaultBandsConfig(), []int{0, 1, 2, 3}, views, gossip.BandStandard, now)
	if want := []int{1, 3, 2, 0}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	off := DefaultBandsConfig()
	off.WaitWeight = 0
	if got := preferReady(off, []int{0, 1, 2, 3}, views, gossip.BandStandard, now); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("with WaitWeight 0: order %v, want unchanged", got)
	}
}

// TestSaturatedFor: a band is saturated when every usable cell announces a
// wait above ShedAfter for it; the answer's wait is the shortest.
func TestSaturatedFor(t *testing.T) {
	now := time.Unix(1000, 0)
	sh := func(d time.Duration) gossip.BandWaits { return gossip.BandWaits{gossip.BandSheddable: d} }
	drained := waitingView("x", now, sh(0))
	drained.Draining = true
	stale := waitingView("s", now.Add(-time.Minute), sh(time.Second))
	cfg := DefaultBandsConfig()
	never := cfg
	never.ShedAfter = -1
	lenient := cfg
	lenient.ShedAfter = 2 * time.Second
	for _, tc := range []struct {
		name     string
		cfg      BandsConfig
		views    []CellView
		full     bool
		wantWait time.Duration
	}{
		{"all waiting", cfg, []CellView{waitingView("a", now, sh(3*time.Second)), waitingView("b", now, sh(time.Second))}, true, time.Second},
		{"one ready", cfg, []CellView{waitingView("a", now, sh(3*time.Second)), waitingView("b", now, sh(0))}, false, 0},
		{"drained ready cell does not count", cfg, []CellView{waitingView("a", now, sh(time.Second)), drained}, true, time.Second},
		{"stale wait is none", cfg, []CellView{waitingView("a", now, sh(time.Second)), stale}, false, 0},
		{"no usable cell", cfg, []CellView{drained}, false, 0},
		{"no cell", cfg, nil, false, 0},
		{"never", never, []CellView{waitingView("a", now, sh(time.Hour))}, false, 0},
		{"under ShedAfter", lenient, []CellView{waitingView("a", now, sh(time.Second))}, false, 0},
		{"over ShedAfter", lenient, []CellView{waitingView("a", now, sh(3*time.Second))}, true, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full, wait := saturatedFor(tc.cfg, tc.views, gossip.BandSheddable, now)
			if full != tc.full || wait != tc.wantWait {
				t.Fatalf("got %v, %v; want %v, %v", full, wait, tc.full, tc.wantWait)
			}
		})
	}
}

// TestBandsConfigValidate names the bad field.
func TestBandsConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.Bands.WaitWeight = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "bands.wait_weight = -1") {
		t.Fatalf("got %v, want an error naming bands.wait_weight", err)
	}
	c = DefaultConfig()
	c.Bands.MaxAge = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "bands.max_age = 0s") {
		t.Fatalf("got %v, want an error naming bands.max_age", err)
	}
}

// headerCell is a stand-in cell's data plane that records the priority
// header of every request.
type headerCell struct {
	mu   sync.Mutex
	seen []string
}

func (h *headerCell) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.seen) == 0 {
		return ""
	}
	return h.seen[len(h.seen)-1]
}

// TestRequestBandForwarded: globald decides the band where the request
// enters (the key's tenant's, lowered by the client's header, never
// raised) and hands it to the cell in the priority header; a header that
// names no band is refused with 400 in OpenAI's shape.
func TestRequestBandForwarded(t *testing.T) {
	rec := &headerCell{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Header.Get(auth.PriorityHeader))
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"text":"ok"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	tlstest.Write(t, keys, []byte("tenants:\n  - {name: batch, priority: sheddable}\n  - {name: prod, priority: critical}\nkeys:\n"+
		"  - {sha256: "+auth.HashKey("batch-key").String()+", tenant: batch, scopes: [inference]}\n"+
		"  - {sha256: "+auth.HashKey("prod-key").String()+", tenant: prod, scopes: [inference]}\n"))
	view := CellView{ID: "cell-h", HTTPAddr: strings.TrimPrefix(srv.URL, "http://"), Alive: true}
	g := startGlobalWith(t, StaticDirectory{view}, func(c *Config) { c.Security.KeyFile = keys })
	for _, tc := range []struct {
		key, header string
		status      int
		want        string
	}{
		{"batch-key", "", 200, "sheddable"},
		{"batch-key", "critical", 200, "sheddable"},
		{"prod-key", "", 200, "critical"},
		{"prod-key", "Standard", 200, "standard"},
		{"prod-key", "urgent", 400, ""},
	} {
		req, _ := http.NewRequest("POST", "http://"+g.HTTPAddr()+"/v1/completions", strings.NewReader(`{"model":"m","prompt":"hi","max_tokens":1}`))
		req.Header.Set("Authorization", "Bearer "+tc.key)
		if tc.header != "" {
			req.Header.Set(auth.PriorityHeader, tc.header)
		}
		before := len(rec.seen)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Code, Type, Param string } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("%s with %q: status %d, want %d", tc.key, tc.header, resp.StatusCode, tc.status)
		}
		if tc.status != 200 {
			if body.Error.Code != "invalid_priority" || len(rec.seen) != before {
				t.Fatalf("%s with %q: error %+v, cell saw %d requests; want invalid_priority and none", tc.key, tc.header, body.Error, len(rec.seen)-before)
			}
			continue
		}
		if got := rec.last(); got != tc.want {
			t.Fatalf("%s with %q: the cell saw band %q, want %q", tc.key, tc.header, got, tc.want)
		}
	}
}

// TestShedSheddableOverGossip runs globald and two real cells in one real
// gossip pool. The cells' band waits travel by gossip; globald sends a
// request to the cell that can take it now, refuses a sheddable request
// with 429 and Retry-After once every cell would queue it (other bands
// still pass), and takes it again once a cell announces it is ready.
func TestShedSheddableOverGossip(t *testing.T) {
	hits := &sync.Map{}
	d := startDaemon(t)
	seed := d.GossipAddr()
	a, b := startPoolCell(t, "cell-a", seed, hits), startPoolCell(t, "cell-b", seed, hits)
	var waitA, waitB atomic.Int64 // the sheddable band's wait, ns
	provider := func(w *atomic.Int64) cell.BandWaitFunc {
		return func(p auth.Priority) time.Duration {
			if p == auth.PrioritySheddable {
				return time.Duration(w.Load())
			}
			return 0
		}
	}
	a.c.SetBandWaits(provider(&waitA))
	b.c.SetBandWaits(provider(&waitB))
	waitFor(t, "summaries of both cells", func() bool { return knows(d, "cell-a", "cell-b") })
	url := "http://" + d.HTTPAddr() + "/v1/completions"
	var lastBody string
	send := func(band string, salt uint32) *http.Response {
		body, _ := json.Marshal(map[string]any{"model": "m", "prompt": tokens(salt, 64), "max_tokens": 1})
		req, _ := http.NewRequest("POST", url, strings.NewReader(string(body)))
		req.Header.Set(auth.PriorityHeader, band)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lastBody = string(b)
		return resp
	}
	announced := func(id string, want time.Duration) func() bool {
		return func() bool {
			for _, v := range d.Router().views() {
				if v.ID == id {
					return v.Load.Waits.Of(gossip.BandSheddable) == want
				}
			}
			return false
		}
	}

	// Cell a queues sheddable work: every sheddable request goes to b,
	// cold prompts included, whatever their stable hash prefers. (On a
	// loaded machine memberlist may hold cell-b suspect for a moment, when
	// cell-a is the only usable cell and the request is refused: it is
	// sent again, but never served by cell-a.)
	waitA.Store(int64(1500 * time.Millisecond))
	waitFor(t, "cell-a's wait at globald", announced("cell-a", 1500*time.Millisecond))
	for i := range 8 {
		waitFor(t, "a sheddable request served", func() bool {
			resp := send("sheddable", uint32(500+i))
			if resp.StatusCode == 200 && resp.Header.Get(CellHeader) != "cell-b" {
				t.Fatalf("request %d: served by %q, want cell-b", i, resp.Header.Get(CellHeader))
			}
			if resp.StatusCode != 200 && resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("request %d: %d (%s), want 200 from cell-b", i, resp.StatusCode, lastBody)
			}
			return resp.StatusCode == 200
		})
	}
	// Both queue it: 429 before any hand-off, Retry-After the shorter wait
	// rounded up; standard work still flows.
	waitB.Store(int64(2500 * time.Millisecond))
	waitFor(t, "cell-b's wait at globald", announced("cell-b", 2500*time.Millisecond))
	resp := send("sheddable", 600)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("sheddable with both cells waiting: %d, Retry-After %q; want 429, 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var e struct {
		Error struct {
			Message, Type, Code string
			Param               *string
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(lastBody), &e); err != nil || e.Error.Type != "requests" || e.Error.Code != ShedCode || e.Error.Message == "" {
		t.Fatalf("429 body %s (%v), want OpenAI's shape with type requests and code %s", lastBody, err, ShedCode)
	}
	if resp := send("standard", 601); resp.StatusCode != 200 {
		t.Fatalf("standard with both cells waiting on sheddable work: %d, want 200", resp.StatusCode)
	}
	// Cell a is ready again: its zero wait reaches globald, and sheddable
	// requests flow to it.
	waitA.Store(0)
	waitFor(t, "cell-a ready at globald", announced("cell-a", 0))
	if resp := send("sheddable", 602); resp.StatusCode != 200 || resp.Header.Get(CellHeader) != "cell-a" {
		t.Fatalf("after cell-a is ready: %d from %q, want 200 from cell-a", resp.StatusCode, resp.Header.Get(CellHeader))
	}
}

// BenchmarkSaturatedFor is the check every sheddable request pays before
// its decision, at 64 cells, none of them saturated but the last.
func BenchmarkSaturatedFor(b *testing.B) {
	now := time.Unix(1000, 0)
	views := make([]CellView, 64)
	for i := range views {
		views[i] = waitingView("c", now, gossip.BandWaits{gossip.BandSheddable: time.Second})
	}
	views[63].Load.Waits = gossip.BandWaits{}
	cfg := DefaultBandsConfig()
	b.ReportAllocs()
	for b.Loop() {
		if full, _ := saturatedFor(cfg, views, gossip.BandSheddable, now); full {
			b.Fatal("saturated")
		}
	}
}

// BenchmarkChargeWaits is the wait term of a probed decision (two probes).
func BenchmarkChargeWaits(b *testing.B) {
	now := time.Unix(1000, 0)
	views := []CellView{waitingView("a", now, gossip.BandWaits{0, time.Second}), waitingView("b", now, gossip.BandWaits{})}
	answers := []ProbeAnswer{{Cell: 0}, {Cell: 1}}
	cfg := DefaultBandsConfig()
	b.ReportAllocs()
	for b.Loop() {
		chargeWaits(cfg, answers, views, gossip.BandStandard, now)
	}
}
