package edge

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/auth"
)

// testKeys is a key file of three tenants: acme (isolated, 1 request per
// second, burst 2, 1 in flight), lab (not isolated, unlimited) and ops.
// Its keys are "acme-key" (inference), "lab-key" (inference, admin) and
// "ops-key" (admin, events).
func testKeys(t testing.TB) *auth.Table {
	t.Helper()
	f := "tenants:\n" +
		"  - {name: acme, requests_per_second: 1, burst: 2, max_concurrent: 1}\n" +
		"  - {name: lab, isolated: false}\n" +
		"  - {name: ops}\n" +
		"keys:\n" +
		"  - {sha256: " + auth.HashKey("acme-key").String() + ", tenant: acme, scopes: [inference]}\n" +
		"  - {sha256: " + auth.HashKey("lab-key").String() + ", tenant: lab, scopes: [inference, admin]}\n" +
		"  - {sha256: " + auth.HashKey("ops-key").String() + ", tenant: ops, scopes: [admin, events]}\n"
	tab, err := auth.ParseKeyFile([]byte(f))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// clock is a settable clock for the limits.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestGuard(t testing.TB, cfg GuardConfig) (*Guard, *Metrics, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	cfg.Now = c.now
	m := NewMetrics(prometheus.NewRegistry())
	g := NewGuard(cfg, m)
	g.SetKeys(testKeys(t))
	return g, m, c
}

// verified is the TLS state of a connection whose client certificate the
// server verified; uris are the certificate's URI names (its roles).
func verified(uris ...string) *tls.ConnectionState {
	leaf := &x509.Certificate{}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			panic(err)
		}
		leaf.URIs = append(leaf.URIs, pu)
	}
	return &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf}}}
}

// errorOf decodes an OpenAI error body.
func errorOf(t testing.TB, body string) openai.ErrorDetail {
	t.Helper()
	var eb struct {
		Error *openai.ErrorDetail `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error == nil {
		t.Fatalf("body %q is not an OpenAI error", body)
	}
	return *eb.Error
}

func codeOf(d openai.ErrorDetail) string { return strings.Trim(string(d.Code), `"`) }

// counter returns the value of a counter or gauge.
func counter(c prometheus.Collector) float64 {
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		panic(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// echo answers with what the handler saw: the principal's tenant, scopes
// and peer flag, and the tenant and authorization headers.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p, ok := PrincipalFrom(r.Context())
	if !ok {
		http.Error(w, "no principal", 500)
		return
	}
	w.Header().Set("X-Tenant", p.TenantName())
	w.Header().Set("X-Scopes", p.Scopes.String())
	if p.Peer {
		w.Header().Set("X-Peer", "yes")
	}
	w.Header().Set("X-Saw-Tenant-Header", r.Header.Get(TenantHeader))
	w.Header().Set("X-Saw-Authorization", r.Header.Get("Authorization"))
	w.WriteHeader(http.StatusOK)
})
