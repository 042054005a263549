package cell

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// TestEPPKeysAndTenants checks that picker mode admits requests as proxy
// mode does, by the API key in the request's headers: 401 without one,
// 403 for a key without the inference scope, a tenant's salt in the body
// (with its Content-Length), the tenant header set and the key removed
// before the pod, and a tenant's concurrency limit held until the gateway
// finished the response (429 meanwhile).
func TestEPPKeysAndTenants(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a")}
	_, client := eppCell(t, pods, func(cfg *Config) {
		cfg.Auth.KeyFile, cfg.Auth.ReloadInterval = keyFile(t, t.TempDir()), time.Minute
	})
	body := []byte(`{"model":"m","prompt":"a prompt for the tenant","stream":true}`)
	call := func(key string, cancelAfter int) *epptest.Outcome {
		t.Helper()
		h := http.Header{}
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
		h.Set(edge.TenantHeader, "lab") // a client's claim, never believed
		out, err := epptest.Do(context.Background(), client, epptest.Call{Method: "POST", Path: "/v1/completions", Header: h, Body: body, Frames: 2, CancelAfter: cancelAfter})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for key, want := range map[string]int{"": 401, "nope": 401, "ops-key": 403} {
		if out := call(key, 0); out.Immediate == nil || int(out.Immediate.GetStatus().GetCode()) != want {
			t.Fatalf("key %q: %v, want an immediate %d", key, out.Immediate, want)
		}
	}
	out := call("acme-key", 0)
	if out.Immediate != nil || out.Status != 200 {
		t.Fatalf("acme: immediate %v status %d", out.Immediate, out.Status)
	}
	var fwd map[string]any
	if err := json.Unmarshal(out.Forwarded, &fwd); err != nil || fwd["cache_salt"] == nil || out.SetHeaders["content-length"] == "" {
		t.Fatalf("acme's forwarded body %s (content-length %q): want the tenant's cache_salt", out.Forwarded, out.SetHeaders["content-length"])
	}
	got := pods[0].last()
	if got.header.Get(edge.TenantHeader) != "acme" || got.header.Get("Authorization") != "" || got.body["cache_salt"] != fwd["cache_salt"] {
		t.Fatalf("the pod got tenant %q authorization %q salt %v", got.header.Get(edge.TenantHeader), got.header.Get("Authorization"), got.body["cache_salt"])
	}
	if !strings.Contains(string(out.Response), "data: [DONE]") {
		t.Fatalf("response %q", out.Response)
	}

	// acme may have one request in flight: while a stream is held open the
	// next is 429, and the slot comes back when the gateway goes away.
	setHold := func(v bool) {
		pods[0].mu.Lock()
		pods[0].hold = v
		pods[0].mu.Unlock()
	}
	setHold(true)
	before := pods[0].count()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The first call's slot is given back when its stream ended on the
		// cell's side, which may be a moment after the client returned:
		// a 429 until then is retried. The admitted call ends with the
		// cancel below (its error then is the point).
		for ctx.Err() == nil {
			out, err := epptest.Do(ctx, client, epptest.Call{Method: "POST", Path: "/v1/completions",
				Header: http.Header{"Authorization": {"Bearer acme-key"}}, Body: body})
			if err != nil || out.Immediate == nil || out.Immediate.GetStatus().GetCode() != 429 {
				return
			}
		}
	}()
	waitFor(t, "the held request at the pod", func() bool { return pods[0].count() > before })
	if out := call("acme-key", 0); out.Immediate == nil || out.Immediate.GetStatus().GetCode() != 429 {
		t.Fatalf("acme's second request in flight: %v, want an immediate 429", out.Immediate)
	}
	cancel()
	<-done
	setHold(false)
	waitFor(t, "acme's slot back", func() bool { return call("acme-key", 0).Immediate == nil })
}
