package browsertest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/tlsconf"
	"github.com/cellrouter/cellrouter/loadtest/fleet"
)

// EnvUpdateScreenshots set to 1 makes TestStatusPagesInBrowser write its
// screenshots over docs/status-globald.png and docs/status-celld.png.
const EnvUpdateScreenshots = "CELLROUTER_UPDATE_SCREENSHOTS"

// startDemoFleet starts the fleet `globald --demo` runs (secure: API keys
// at the global endpoint, mutual TLS to the cells) and sends the demo's
// chat twice, so the pages have probes, hand-offs and cache hits to show.
func startDemoFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	cfg := fleet.DefaultConfig()
	cfg.Cells, cfg.PodsPerCell, cfg.Secure = 2, 3, true
	cfg.ProbeTimeout = 5 * time.Second // a loaded machine
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := fleet.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("fleet: %v", err)
		}
	})
	body := fleet.ExampleChat(cfg.Pod.Model)
	send := func(i int) string {
		req, _ := http.NewRequest(http.MethodPost, f.Endpoint()+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+f.APIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("chat %d: %d %s", i, resp.StatusCode, b)
		}
		return resp.Header.Get("X-Cellrouter-Cell")
	}
	// The first send is cold; once its cell gossiped a summary holding
	// its blocks, the next ones are routed by summary, as in the demo.
	cell := send(0)
	gen := summaryGen(f, cell)
	waitFor(t, "a new summary of "+cell, time.Minute, func() bool { return summaryGen(f, cell) > gen })
	for i := 1; i < 3; i++ {
		send(i)
	}
	return f
}

// summaryGen is the generation of the cell's summary the global tier holds.
func summaryGen(f *fleet.Fleet, cell string) uint64 {
	for _, v := range f.Global.Router().Cells() {
		if v.ID == cell {
			return v.SummaryGen
		}
	}
	return 0
}

// adminProxy serves a cell's HTTP address on a local plain-HTTP address
// through the operator's admin certificate: the cells of a secure fleet
// take mutual TLS only, as a deployment's do.
func adminProxy(t *testing.T, f *fleet.Fleet, cellAddr string) string {
	t.Helper()
	src, err := tlsconf.NewSource(f.AdminTLS)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "https", Host: cellAddr})
	tr := &http.Transport{TLSClientConfig: src.ClientConfig()}
	rp.Transport = tr
	srv := httptest.NewServer(rp)
	t.Cleanup(func() { srv.Close(); tr.CloseIdleConnections() })
	return srv.URL
}

// checkPage loads a status page, requires every name in want among the
// texts of selector and a clean console, and returns the page's
// screenshot.
func checkPage(t *testing.T, tab *Tab, pageURL, selector string, want []string) []byte {
	t.Helper()
	if err := tab.Navigate(pageURL); err != nil {
		t.Fatal(err)
	}
	got, err := tab.Texts(selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: %s shows %q, want %q among them", pageURL, selector, got, w)
		}
	}
	if p := tab.Problems(); len(p) != 0 {
		t.Errorf("%s: console problems: %v", pageURL, p)
	}
	png, err := tab.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	return png
}

// saveScreenshot writes png to the test's directory, and over the
// README's copy under docs/ when EnvUpdateScreenshots is 1.
func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s: not a PNG", name)
	}
	p := filepath.Join(t.TempDir(), name)
	if os.Getenv(EnvUpdateScreenshots) == "1" {
		p = filepath.Join("..", "..", "docs", name)
	}
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
}

// TestStatusPagesInBrowser runs the demo fleet and loads both daemons'
// status pages in headless Chromium, as an operator would: globald's with
// the demo's API key, each cell's through an admin certificate. Every
// cell's and pod's real name must be rendered, the console must report no
// error, warning or policy violation, and globald's page must reload
// itself.
func TestStatusPagesInBrowser(t *testing.T) {
	b := startBrowser(t)
	f := startDemoFleet(t)

	gtab := newTab(t, b, map[string]string{"Authorization": "Bearer " + f.APIKey})
	var cells []string
	for i := range f.Cells {
		cells = append(cells, "cell-"+string(rune('0'+i)))
	}
	png := checkPage(t, gtab, f.Endpoint()+"/status", "td.cell-id", cells)
	saveScreenshot(t, "status-globald.png", png)

	// The page reloads itself (<meta http-equiv="refresh">): its
	// generation time moves on, and the reloaded page is as clean.
	first, err := gtab.Texts("time#generated")
	if err != nil || len(first) != 1 {
		t.Fatalf("generated: %q %v", first, err)
	}
	waitFor(t, "the page to reload itself", time.Minute, func() bool {
		now, err := gtab.Texts("time#generated")
		return err == nil && len(now) == 1 && now[0] != first[0]
	})
	if got, err := gtab.Texts("td.cell-id"); err != nil || len(got) != len(cells) {
		t.Errorf("after the reload: cells %q %v, want %d", got, err, len(cells))
	}
	if p := gtab.Problems(); len(p) != 0 {
		t.Errorf("after the reload: console problems: %v", p)
	}

	for i, c := range f.Cells {
		var pods []string
		for _, p := range f.Pods[i] {
			pods = append(pods, p.ID())
		}
		ctab := newTab(t, b, nil)
		png := checkPage(t, ctab, adminProxy(t, f, c.HTTPAddr())+"/status", "td.pod-id", pods)
		if i == 0 {
			saveScreenshot(t, "status-celld.png", png)
		}
	}
}
