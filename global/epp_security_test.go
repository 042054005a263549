package global

import (
	"context"
	"net/http"
	"strings"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellrouter/cellrouter/internal/epp/epptest"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestGlobalPickerRefusesAsTheDataPlane sends the data plane's refusals
// (TestGlobalRejections) through globald's endpoint picker: API keys and
// scopes from the request's Authorization header, reserved salts, models
// no cell serves and oversized bodies get the same statuses and codes as
// ImmediateResponses, and a request that passes them all reaches the
// decision (whose cell advertises no gateway here: 503).
func TestGlobalPickerRefusesAsTheDataPlane(t *testing.T) {
	s := startSecureTier(t, func(c *Config) { c.EPPAddr = "127.0.0.1:0" })
	cc, err := grpc.NewClient(s.g.EPPAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := extprocv3.NewExternalProcessorClient(cc)
	bearer := func(k string) http.Header { return http.Header{"Authorization": {"Bearer " + k}} }
	for _, tt := range []struct {
		name       string
		body       string
		hdr        http.Header
		wantStatus int
		wantCode   string
	}{
		{"no key", tierCompletion, nil, 401, "missing_api_key"},
		{"unknown key", tierCompletion, bearer("stolen"), 401, "invalid_api_key"},
		{"admin key on the data plane", tierCompletion, bearer("ops-key"), 403, "insufficient_scope"},
		{"a tenant header is no key", tierCompletion, http.Header{"X-Cellrouter-Tenant": {"lab"}}, 401, "missing_api_key"},
		{"reserved salt", `{"model":"m","prompt":[1],"cache_salt":"tenant:acme"}`, bearer("lab-key"), 400, "invalid_cache_salt"},
		{"model no cell serves", `{"model":"gpt-nope","prompt":[1,2,3]}`, bearer("lab-key"), 404, "model_not_found"},
		{"body over the limit", `{"model":"m","prompt":"` + strings.Repeat("x", 9000) + `"}`, bearer("lab-key"), 413, "body_too_large"},
		{"admitted, no gateway", tierCompletion, bearer("lab-key"), 503, "no_cell_available"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := epptest.Do(context.Background(), client, epptest.Call{Method: "POST", Path: "/v1/completions",
				Header: tt.hdr, Body: []byte(tt.body), Frames: 3})
			if err != nil {
				t.Fatal(err)
			}
			ir := out.Immediate
			if ir == nil || int(ir.GetStatus().GetCode()) != tt.wantStatus {
				t.Fatalf("got %+v, want an immediate %d", out, tt.wantStatus)
			}
			if got := strings.Trim(string(servertest.ErrorBody(t, string(ir.GetBody())).Code), `"`); got != tt.wantCode {
				t.Fatalf("got %s, want code %s", ir.GetBody(), tt.wantCode)
			}
		})
	}
	if n := s.pod.count(); n != 0 {
		t.Fatalf("%d requests reached the pod through a picker that answers with gateways only", n)
	}
}
