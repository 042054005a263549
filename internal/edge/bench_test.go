package edge

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// BenchmarkRequire is what the guard adds to an authenticated data-plane
// request (parse, hash, look up, admit, strip the key, carry the
// principal) against the bare handler; both build the request the same way.
func BenchmarkRequire(b *testing.B) {
	g, _, _ := newTestGuard(b, GuardConfig{})
	bare := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	rec := httptest.NewRecorder()
	base := httptest.NewRequest("POST", "/v1/completions", nil)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"guarded", g.Require(auth.ScopeInference, bare)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := *base
				req.Header = http.Header{"Authorization": {"Bearer lab-key"}}
				bc.h.ServeHTTP(rec, &req)
			}
		})
	}
}
