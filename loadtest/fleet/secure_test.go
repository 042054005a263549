package fleet

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// secureFleet starts a Secure fleet of two cells of two pods and replaces
// its key file with the tenants of the tests: acme and beta (isolated),
// lab and lab2 (sharing prompts on purpose), and ops (admin); the keys are
// "<tenant>-key".
func secureFleet(t *testing.T) *Fleet {
	t.Helper()
	cfg := DefaultConfig()
	cfg.PodsPerCell = 2
	cfg.Pod.TimeScale = 0
	cfg.SummaryInterval = 100 * time.Millisecond
	cfg.Secure, cfg.ReloadInterval = true, 50*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	kf := "tenants:\n  - {name: acme}\n  - {name: beta}\n  - {name: lab, isolated: false}\n  - {name: lab2, isolated: false}\n  - {name: ops}\nkeys:\n"
	for _, ten := range []string{"acme", "beta", "lab", "lab2"} {
		kf += fmt.Sprintf("  - {sha256: %s, tenant: %s, scopes: [inference]}\n", auth.HashKey(ten+"-key"), ten)
	}
	kf += fmt.Sprintf("  - {sha256: %s, tenant: ops, scopes: [admin]}\n", auth.HashKey("ops-key"))
	if err := os.WriteFile(f.KeyFile, []byte(kf), 0o600); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the new key file", func() bool { code, _, _ := call(t, f, "GET", "/v1/models", "", "ops-key"); return code == 403 })
	return f
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// call sends a request to the global endpoint with key ("" for none).
func call(t *testing.T, f *Fleet, method, path, body, key string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.Endpoint()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// metric sums the samples of series (name and labels, exactly as exposed)
// in a Prometheus text page.
func metric(page, series string) float64 {
	sum := 0.0
	for _, line := range strings.Split(page, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			sum += v
		}
	}
	return sum
}

// counters reads what the isolation test watches: the global tier's
// requests routed by summary and cold, and the tokens the cells' indexes
// predicted cached, summed over the cells (read over mutual TLS as a peer).
type counters struct{ summary, cold, predicted float64 }

func readCounters(t *testing.T, f *Fleet, peer *tls.Config) counters {
	t.Helper()
	_, _, page := call(t, f, "GET", "/metrics", "", "ops-key")
	c := counters{
		summary: metric(page, `cellrouter_global_requests_total{outcome="ok",path="summary_tokens"}`),
		cold:    metric(page, `cellrouter_global_requests_total{outcome="ok",path="cold_tokens"}`),
	}
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: peer}, Timeout: 20 * time.Second}
	defer cl.CloseIdleConnections()
	for i, cell := range f.Cells {
		resp, err := cl.Get("https://" + cell.HTTPAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.predicted += metric(string(b), fmt.Sprintf(`cellrouter_route_predicted_cached_tokens_total{cell="cell-%d"}`, i))
	}
	return c
}

// complete sends prompt as tenant key's and returns the pod and its
// cached_tokens.
func complete(t *testing.T, f *Fleet, key string, prompt []int, salt string) (int, string, int) {
	t.Helper()
	body := map[string]any{"model": DefaultConfig().Pod.Model, "prompt": prompt, "max_tokens": 1}
	if salt != "" {
		body["cache_salt"] = salt
	}
	b, _ := json.Marshal(body)
	code, h, out := call(t, f, "POST", "/v1/completions", string(b), key)
	var resp struct {
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	json.Unmarshal([]byte(out), &resp)
	return code, h.Get("X-Cellrouter-Pod"), resp.Usage.Details.Cached
}

func prompt(base, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = base + i
	}
	return out
}

// peerClient returns a client TLS configuration with a certificate of the
// fleet's CA: a peer of the tier.
func peerClient(t *testing.T, f *Fleet) *tls.Config {
	t.Helper()
	// The test reads the cells' state and metrics (admin) and calls them
	// as globald does (global).
	files, err := f.CA.WriteFiles(t.TempDir(), "test-peer", tlsconf.CertOptions{URIs: []string{auth.RoleURI(auth.RoleAdmin), auth.RoleURI(auth.RoleGlobal)}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := tlsconf.NewSource(files)
	if err != nil {
		t.Fatal(err)
	}
	return src.ClientConfig()
}

// warm sends p as key's tenant until the global tier routes it by summary
// and the pod answers from its cache.
func warm(t *testing.T, f *Fleet, peer *tls.Config, key string, p []int) {
	t.Helper()
	waitUntil(t, key+"'s prompt cached and in a summary", func() bool {
		before := readCounters(t, f, peer)
		code, _, cached := complete(t, f, key, p, "")
		after := readCounters(t, f, peer)
		return code == 200 && cached > 0 && after.summary > before.summary
	})
}

// TestIsolatedTenantsNeverShareCache proves cache isolation across both
// tiers: once acme's prompt is cached in a pod, indexed by its cell and
// gossiped in the cell's summary, the same prompt from beta (another
// isolated tenant) is routed cold by the global tier (no summary holds it
// under beta's salt), matches nothing in any cell's index, and is a miss
// in the engine; the next send of beta hits beta's own cache. Tenants that
// opted out share: lab2 hits what lab cached, and acme still does not.
func TestIsolatedTenantsNeverShareCache(t *testing.T) {
	f := secureFleet(t)
	peer := peerClient(t, f)
	p := prompt(5000, 512)
	warm(t, f, peer, "acme-key", p)

	before := readCounters(t, f, peer)
	code, _, cached := complete(t, f, "beta-key", p, "")
	after := readCounters(t, f, peer)
	if code != 200 || cached != 0 {
		t.Fatalf("beta's first send: %d with %d cached tokens, want 200 and 0 (acme's blocks are acme's)", code, cached)
	}
	if after.summary != before.summary || after.cold != before.cold+1 {
		t.Errorf("beta's first send: routed by summary %v -> %v, cold %v -> %v; want cold at the global tier",
			before.summary, after.summary, before.cold, after.cold)
	}
	if after.predicted != before.predicted {
		t.Errorf("beta's first send: the cells predicted %v cached tokens, want 0", after.predicted-before.predicted)
	}
	// beta naming acme's salt gets a partition of beta's own.
	if code, _, cached := complete(t, f, "beta-key", p, "tenant:acme"); code != 200 || cached != 0 {
		t.Errorf("beta with acme's salt: %d with %d cached tokens, want 200 and 0", code, cached)
	}
	warm(t, f, peer, "beta-key", p)

	// Opted-out tenants share; an isolated one is kept out of their
	// partition, and they cannot name an isolated one's salt.
	q := prompt(9000, 512)
	warm(t, f, peer, "lab-key", q)
	before = readCounters(t, f, peer)
	code, _, cached = complete(t, f, "lab2-key", q, "")
	after = readCounters(t, f, peer)
	if code != 200 || cached == 0 || after.summary != before.summary+1 {
		t.Errorf("lab2 after lab: %d with %d cached tokens, by summary %v; want a hit routed by summary", code, cached, after.summary-before.summary)
	}
	if code, _, cached := complete(t, f, "acme-key", q, ""); code != 200 || cached != 0 {
		t.Errorf("acme on the shared prompt: %d with %d cached tokens, want 200 and 0", code, cached)
	}
	if code, _, _ := complete(t, f, "lab-key", p, "tenant:acme"); code != 400 {
		t.Errorf("lab naming acme's salt: %d, want 400", code)
	}
}

// TestSecureFleet checks the secure fleet end to end: the global endpoint
// wants keys, the cells let in only peers of the tier, a model no pod
// serves is refused at the global tier from the models the cells advertise
// in gossip, without a probe or a pod call.
func TestSecureFleet(t *testing.T) {
	f := secureFleet(t)
	if code, h, body := call(t, f, "POST", "/v1/completions", `{"model":"m","prompt":[1,2,3]}`, ""); code != 401 || h.Get("WWW-Authenticate") == "" ||
		!strings.Contains(body, `"missing_api_key"`) {
		t.Errorf("no key: %d %s", code, body)
	}
	if code, _, _ := complete(t, f, "acme-key", prompt(1, 64), ""); code != 200 {
		t.Errorf("acme: %d", code)
	}
	// The cells: a peer gets in, no one else.
	peer := peerClient(t, f)
	anon, err := tlsconf.NewSource(tlsconf.Config{CAFile: filesCA(t, f)})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*tls.Config{"peer": peer, "no certificate": anon.ClientConfig()} {
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: c}, Timeout: 20 * time.Second}
		resp, err := cl.Get("https://" + f.Cells[0].HTTPAddr() + "/v1/cell/state")
		if name == "peer" {
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("peer: %v %v", resp, err)
			}
		} else if err == nil {
			t.Errorf("a client without a certificate got %d from a cell", resp.StatusCode)
		}
		if resp != nil {
			resp.Body.Close()
		}
		cl.CloseIdleConnections()
	}
	if resp, err := http.Get("http://" + f.Cells[0].HTTPAddr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("a cell served plaintext")
		}
	}
	// A model no pod serves: refused by the global tier once the cells
	// advertise their models.
	var body string
	waitUntil(t, "the cells' models at the global tier", func() bool {
		var code int
		code, _, body = call(t, f, "POST", "/v1/completions", `{"model":"no-such-model","prompt":[1,2,3]}`, "acme-key")
		_, _, page := call(t, f, "GET", "/metrics", "", "ops-key")
		return code == 404 && metric(page, `cellrouter_global_requests_total{outcome="model_not_found",path="unrouted"}`) > 0
	})
	if !strings.Contains(body, `"model_not_found"`) || !strings.Contains(body, `"param":"model"`) {
		t.Errorf("model not found: %s", body)
	}
}

// filesCA writes the fleet CA's certificate to a file for a client.
func filesCA(t *testing.T, f *Fleet) string {
	t.Helper()
	p := t.TempDir() + "/ca.pem"
	if err := os.WriteFile(p, f.CA.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKeyringRotationUnderTraffic rotates the fleet's gossip key through
// its keyring file, which globald and every cell read, in the three steps
// (install the new key, make it the primary, remove the old one), each
// applied by every node before the next, while clients send requests
// through the global endpoint. No request fails, no cell leaves the global
// tier's view, and summaries keep arriving after each step.
func TestKeyringRotationUnderTraffic(t *testing.T) {
	f := secureFleet(t)
	peer := peerClient(t, f)
	data, err := os.ReadFile(f.KeyringFile)
	if err != nil {
		t.Fatal(err)
	}
	oldKey := strings.TrimSpace(string(data))
	newKey := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

	// reloads is how many keyring files every node applied: the least of
	// the global tier's and each cell's count.
	reloads := func() float64 {
		_, _, page := call(t, f, "GET", "/metrics", "", "ops-key")
		least := metric(page, `cellrouter_config_reloads_total{file="keyring",outcome="ok"}`)
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: peer}, Timeout: 20 * time.Second}
		defer cl.CloseIdleConnections()
		for _, c := range f.Cells {
			resp, err := cl.Get("https://" + c.HTTPAddr() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			least = min(least, metric(string(b), `cellrouter_config_reloads_total{file="keyring",outcome="ok"}`))
		}
		return least
	}
	gens := func() map[string]uint64 {
		out := map[string]uint64{}
		for _, v := range f.Global.Router().Cells() {
			if v.Alive {
				out[v.ID] = v.SummaryGen
			}
		}
		return out
	}

	stop := make(chan struct{})
	failures := make(chan string, 100)
	sent := make(chan int, 1)
	go func() {
		n := 0
		defer func() { sent <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b, _ := json.Marshal(map[string]any{"model": DefaultConfig().Pod.Model, "prompt": prompt(20000+i*7, 64), "max_tokens": 1})
			req, _ := http.NewRequest("POST", f.Endpoint()+"/v1/completions", strings.NewReader(string(b)))
			req.Header.Set("Authorization", "Bearer acme-key")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != 200 {
				select {
				case failures <- fmt.Sprintf("request %d: %v %v", i, resp, err):
				default:
				}
			}
			n++
		}
	}()
	for step, keys := range [][]string{{oldKey, newKey}, {newKey, oldKey}, {newKey}} {
		before := gens()
		if err := os.WriteFile(f.KeyringFile, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, fmt.Sprintf("step %d applied by every node", step+1), func() bool { return reloads() >= float64(step+1) })
		waitUntil(t, fmt.Sprintf("summaries after step %d", step+1), func() bool {
			now := gens()
			for id, g := range before {
				if now[id] <= g {
					return false
				}
			}
			return len(now) == len(f.Cells)
		})
	}
	close(stop)
	if n := <-sent; n == 0 {
		t.Fatal("no request was sent during the rotation")
	}
	close(failures)
	for msg := range failures {
		t.Error(msg)
	}
	if got := len(gens()); got != len(f.Cells) {
		t.Errorf("%d cells alive at the global tier after the rotation, want %d", got, len(f.Cells))
	}
}
