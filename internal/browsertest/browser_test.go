package browsertest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/statuspage"
)

// startBrowser starts the browser for a test, or skips it, saying why,
// when none is installed.
func startBrowser(t *testing.T) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("browsertest: -short: no browser")
	}
	path, err := Find()
	if errors.Is(err, ErrNoBrowser) {
		t.Skipf("browsertest: skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(path, 1440, 900)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func newTab(t *testing.T, b *Browser, headers map[string]string) *Tab {
	t.Helper()
	tab, err := b.NewTab(headers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tab.Close)
	return tab
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventually waits until the tab's problems include one whose text holds
// want (the browser reports violations asynchronously).
func hasProblem(tab *Tab, want string) bool {
	for _, m := range tab.Problems() {
		if strings.Contains(m.Text, want) {
			return true
		}
	}
	return false
}

// TestDetectsViolations is the detector's control: a page under the
// status pages' policy that carries an inline script and a style
// attribute must be reported, or a clean report of a real page would
// prove nothing. The same tab then loads a status page, whose style
// sheet the policy must allow (its hash) and which must report nothing.
func TestDetectsViolations(t *testing.T) {
	b := startBrowser(t)
	tmpl := statuspage.Must(`{{define "content"}}<table><tr><th id="h">pod</th></tr><tr><td class="pod-id">{{.}}</td></tr></table>{{end}}`)
	page := &statuspage.Handler{Template: tmpl, Tier: "cell", Target: "pod", Title: "clean",
		Body: func(time.Time) (any, error) { return "<script>alert(1)</script>", nil }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/status" {
			page.ServeHTTP(w, r)
			return
		}
		statuspage.SetHeaders(w.Header())
		fmt.Fprint(w, `<!DOCTYPE html><html><head><title>dirty</title></head><body><p style="color:red">x</p>`+
			`<script>console.log("ran")</script></body></html>`)
	}))
	defer srv.Close()

	dirty := newTab(t, b, nil)
	if err := dirty.Navigate(srv.URL + "/dirty"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the inline script's violation", 30*time.Second, func() bool { return hasProblem(dirty, "Content Security Policy") })
	for _, m := range dirty.Console() {
		if strings.Contains(m.Text, "ran") {
			t.Errorf("the inline script ran under the policy: %v", m)
		}
	}

	clean := newTab(t, b, nil)
	if err := clean.Navigate(srv.URL + "/status"); err != nil {
		t.Fatal(err)
	}
	got, err := clean.Texts("td.pod-id")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "<script>alert(1)</script>" {
		t.Errorf("pod cells = %q, want the name shown as text", got)
	}
	// The style sheet applied: the policy allowed it by its hash.
	weight, err := clean.Texts("th#h")
	if err != nil || len(weight) != 1 {
		t.Fatalf("th: %q %v", weight, err)
	}
	fw, err := clean.Eval(`getComputedStyle(document.querySelector("th#h")).fontWeight`)
	if err != nil {
		t.Fatal(err)
	}
	if fw != "600" {
		t.Errorf("th font-weight = %q, want the style sheet's 600 (was the inline style blocked?)", fw)
	}
	if p := clean.Problems(); len(p) != 0 {
		t.Errorf("the status page reported problems: %v", p)
	}
}

// TestFind checks how the browser is found: none on an empty PATH (the
// tests then skip with ErrNoBrowser's reason), the one named by
// CELLROUTER_CHROMIUM, and an error naming the variable when that one
// does not exist.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	t.Setenv(EnvBrowser, "")
	if _, err := Find(); !errors.Is(err, ErrNoBrowser) {
		t.Errorf("Find on an empty PATH: %v, want ErrNoBrowser", err)
	}
	fake := dir + "/chromium-browser"
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(); err != nil || got != fake {
		t.Errorf("Find = %q, %v; want %s", got, err, fake)
	}
	t.Setenv(EnvBrowser, dir+"/no-such-browser")
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), EnvBrowser) {
		t.Errorf("Find with a missing %s: %v, want an error naming it", EnvBrowser, err)
	}
}
