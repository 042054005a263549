package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// enginePod answers status with the headers an engine and the load
// balancer in front of it might add, some naming the pod's address.
func enginePod(t *testing.T, status int) *fakePod {
	return newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Enginesim-Pod", r.Host) // the address the proxy dialed
		h.Set("Server", "uvicorn")
		h.Set("Set-Cookie", "lb=pod-7")
		h.Set("X-Backend", "http://"+r.Host+"/v1")
		h.Set("X-Request-Id", "req-1")
		h.Set("Openai-Processing-Ms", "12")
		h.Set("X-Ratelimit-Remaining-Requests", "99")
		h.Set("Retry-After", "2")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Custom", "ok")
		w.WriteHeader(status)
		io.WriteString(w, `{"id":"x","choices":[]}`)
	})
}

// TestRelaysOnlyAllowedResponseHeaders checks, for a success and for an
// error answer (relayed on another path), that a client gets the allowed
// headers and none of the rest: not the engine's X-Enginesim-Pod, not any
// header whose value names the pod's address.
func TestRelaysOnlyAllowedResponseHeaders(t *testing.T) {
	for _, status := range []int{200, 429} {
		pod := enginePod(t, status)
		p := testProxy(t, Config{})
		f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
			return p.Forward(w, r, body, []Target{pod.target("a")}, Hooks{})
		})
		resp, err := post(context.Background(), f.URL+"/v1/completions", `{"model":"m","prompt":"hi"}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		f.nextErr(t)
		if resp.StatusCode != status {
			t.Fatalf("status: got %d, want %d", resp.StatusCode, status)
		}
		for _, k := range []string{"Content-Type", "X-Request-Id", "Openai-Processing-Ms", "X-Ratelimit-Remaining-Requests", "Retry-After", "Cache-Control"} {
			if resp.Header.Get(k) == "" {
				t.Errorf("status %d: %s not relayed", status, k)
			}
		}
		for _, k := range []string{"X-Enginesim-Pod", "Server", "Set-Cookie", "X-Backend", "X-Custom"} {
			if v := resp.Header.Get(k); v != "" {
				t.Errorf("status %d: %s relayed (%q)", status, k, v)
			}
		}
		for k, vv := range resp.Header {
			if addr := pod.target("a").Address; strings.Contains(strings.Join(vv, " "), addr) {
				t.Errorf("status %d: %s carries the pod's address %s", status, k, addr)
			}
		}
	}
}

// TestRelayResponseHeadersConfigurable checks an operator's list replaces
// the default, and that an allowed header naming the pod's host is still
// dropped.
func TestRelayResponseHeadersConfigurable(t *testing.T) {
	pod := enginePod(t, 200)
	cfg := DefaultConfig()
	cfg.RelayResponseHeaders = []string{"content-type", "x-cus*", "X-Backend"}
	p := testProxy(t, cfg)
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{pod.target("a")}, Hooks{})
	})
	resp, err := post(context.Background(), f.URL+"/v1/completions", `{"model":"m","prompt":"hi"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	f.nextErr(t)
	if resp.Header.Get("X-Custom") != "ok" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("listed headers: got X-Custom %q Content-Type %q", resp.Header.Get("X-Custom"), resp.Header.Get("Content-Type"))
	}
	if v := resp.Header.Get("X-Request-Id"); v != "" {
		t.Errorf("X-Request-Id relayed (%q) though not listed", v)
	}
	if v := resp.Header.Get("X-Backend"); v != "" {
		t.Errorf("X-Backend relayed (%q) though it names the pod", v)
	}
}

// TestRelayed checks the allow-list match against a plain model: exact
// names case-insensitively, prefixes with a trailing "*".
func TestRelayed(t *testing.T) {
	allow := []string{"Content-Type", "openai-*", "X-Ratelimit-*"}
	cases := map[string]bool{
		"Content-Type": true, "Content-Length": false, "Openai-Model": true, "Openai-": true,
		"Openai": false, "X-Ratelimit-Reset-Tokens": true, "X-Enginesim-Pod": false, "": false,
	}
	for k, want := range cases {
		if got := relayed(k, allow); got != want {
			t.Errorf("relayed(%q): got %v, want %v", k, got, want)
		}
	}
}

// TestCheckRelayHeaders checks the validation of an allow-list.
func TestCheckRelayHeaders(t *testing.T) {
	for _, tc := range []struct {
		list []string
		ok   bool
	}{
		{DefaultRelayResponseHeaders(), true},
		{[]string{"X-A", "X-B-*"}, true},
		{[]string{""}, false},
		{[]string{"*"}, false},
		{[]string{"X A"}, false},
		{[]string{"Transfer-Encoding"}, false},
		{[]string{"connection"}, false},
	} {
		err := CheckRelayHeaders(tc.list)
		if (err == nil) != tc.ok {
			t.Errorf("CheckRelayHeaders(%q): got %v, want ok %v", tc.list, err, tc.ok)
		}
	}
	cfg := DefaultConfig()
	cfg.RelayResponseHeaders = []string{"bad header"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "RelayResponseHeaders") {
		t.Errorf("Validate: got %v, want an error naming RelayResponseHeaders", err)
	}
}

// BenchmarkCopyResponseHeader measures the per-response header copy of a
// typical engine answer.
func BenchmarkCopyResponseHeader(b *testing.B) {
	src := http.Header{
		"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}, "X-Request-Id": {"req-1"},
		"Server": {"uvicorn"}, "Date": {"Mon"}, "X-Enginesim-Pod": {"10.0.0.7:8000"},
	}
	allow := DefaultRelayResponseHeaders()
	dst := make(http.Header, 8)
	b.ReportAllocs()
	for b.Loop() {
		clear(dst)
		copyResponseHeader(dst, src, allow, "10.0.0.7:8000")
	}
}
