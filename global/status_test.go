package global

import (
	"html"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
	"github.com/cellrouter/cellrouter/internal/statuspage"
)

// TestGlobalStatusPage routes a request to the cell holding its prefix and
// checks that GET /status shows every cell as the directory sees it, with
// the summary's figures, the probes sent and the hit rates the pods
// reported, under the status page's headers.
func TestGlobalStatusPage(t *testing.T) {
	hits := &sync.Map{}
	a, b := startTestCell(t, "cell-a", hits), startTestCell(t, "cell-b", hits)
	toks := tokens(3, 32*16)
	b.hold(t, "cell-b-pod1", toks, 24)
	va, vb := a.view(t), b.view(t)
	va.Models, vb.Models = gossip.NewModelSet("m"), gossip.NewModelSet("m", "other")
	vb.SummaryGen, vb.SummaryAge = 7, 1500*time.Millisecond
	vb.Load = CellLoad{ActiveRequests: 3, ActiveBlocks: 300, FreeBlocks: 700, Pods: 2}
	dead := CellView{ID: "cell-gone", HTTPAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:1"}
	g := startGlobalWith(t, StaticDirectory{va, vb, dead}, func(c *Config) { c.Status.Refresh = 10 * time.Second })
	resp, body := post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	if resp.StatusCode != 200 || resp.Header.Get(CellHeader) != "cell-b" {
		t.Fatalf("got %d %s from %q, want cell-b", resp.StatusCode, body, resp.Header.Get(CellHeader))
	}

	hr, err := http.Get("http://" + g.HTTPAddr() + StatusPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(hr.Body)
	hr.Body.Close()
	page := string(raw)
	if hr.StatusCode != 200 {
		t.Fatalf("GET /status = %d %s", hr.StatusCode, page)
	}
	if got := hr.Header.Get("Content-Security-Policy"); got != statuspage.ContentSecurityPolicy {
		t.Errorf("Content-Security-Policy = %q, want %q", got, statuspage.ContentSecurityPolicy)
	}
	st := g.status(time.Now())
	var cb cellStatus
	for _, c := range st.Cells {
		if c.ID == "cell-b" {
			cb = c
		}
	}
	if cb.Stats.Probes < 1 || cb.Stats.Handoffs != 1 || cb.Stats.PromptTokens != 10 || cb.Stats.RealisedTokens != 5 {
		t.Errorf("cell-b's counters = %+v, want at least one probe, one hand-off of 10 prompt tokens, 5 cached", cb.Stats)
	}
	if cb.Load.ActiveRequests != 4 || cb.Load.ActiveBlocks+cb.Load.FreeBlocks != 1000 {
		t.Errorf("cell-b's load = %+v, want the gossiped 3 requests and 1000 blocks plus the hand-off", cb.Load)
	}
	if cb.Stats.PredictedTokens != 24*uint64(g.cfg.BlockSize) {
		t.Errorf("cell-b's predicted tokens = %d, want its 24 blocks' %d", cb.Stats.PredictedTokens, 24*g.cfg.BlockSize)
	}
	fp := html.EscapeString(statuspage.Rate(vb.Summary.(*gossip.Summary).EstimatedFalsePositiveRate()))
	for _, want := range []string{
		"<title>globald</title>", `<meta http-equiv="refresh" content="10">`,
		`<td class="cell-id"><code>cell-a</code></td><td class="ok">alive</td>`,
		`<td class="cell-id"><code>cell-gone</code></td><td class="bad">dead</td>`,
		"<code>cell-b</code>: http <code>" + b.c.HTTPAddr() + "</code>, grpc <code>" + b.c.GRPCAddr() + "</code>",
		"<td>2 · <code>m</code></td>", "<td>not listed</td>",
		"gen 7 · 1.5s · " + statuspage.Bytes(int64(vb.SummaryBytes)) + " · " + fp,
		// The load is the router's: the gossiped one plus the hand-off since.
		`<td class="n">4 / ` + statuspage.Count(int64(cb.Load.ActiveBlocks)) + ` / ` + statuspage.Count(int64(cb.Load.FreeBlocks)) + ` · 2</td>`,
		statuspage.Percent(float64(cb.Load.ActiveBlocks) / 1000),
		`<td class="n">` + statuspage.Percent(float64(24*g.cfg.BlockSize)/10) + ` / 50.0%</td>`,
		"<dt>prompt tokens served</dt><dd>10</dd>",
		// The hand-off is the ring's, linked to its explanation.
		`<a href="/v1/global/decisions/`, "<td>cell-b</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}

// TestGlobalStatusPageAuth checks that the page is the control plane's:
// 401 without a key, 403 for an inference key (OpenAI's error shape), 200
// for an admin key, and that no key appears on it.
func TestGlobalStatusPageAuth(t *testing.T) {
	s := startSecureTier(t, nil)
	for _, tt := range []struct {
		name, key string
		want      int
		wantCode  string
	}{
		{"no key", "", 401, "missing_api_key"},
		{"unknown key", "nope", 401, "invalid_api_key"},
		{"inference key", "lab-key", 403, "insufficient_scope"},
		{"admin key", "ops-key", 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var hdr map[string]string
			if tt.key != "" {
				hdr = map[string]string{"Authorization": "Bearer " + tt.key}
			}
			code, h, body := s.call(t, "GET", StatusPath, "", hdr)
			if code != tt.want {
				t.Fatalf("got %d %s, want %d", code, body, tt.want)
			}
			if tt.wantCode != "" {
				if got := strings.Trim(string(servertest.ErrorBody(t, body).Code), `"`); got != tt.wantCode {
					t.Errorf("code = %s, want %s", got, tt.wantCode)
				}
				if code == 401 && h.Get("WWW-Authenticate") == "" {
					t.Error("a 401 without WWW-Authenticate")
				}
				return
			}
			if !strings.Contains(body, "<code>cell-a</code>") {
				t.Errorf("the page does not show cell-a: %s", body)
			}
			for _, k := range []string{"acme-key", "lab-key", "ops-key"} {
				if strings.Contains(body, k) {
					t.Errorf("the page shows the key %q", k)
				}
			}
		})
	}
}
