package servers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/api/openai"
)

// fakeCell serves two of CellService's methods; the others are
// unimplemented.
type fakeCell struct {
	cellv1.UnimplementedCellServiceServer
}

func (fakeCell) ListPods(context.Context, *cellv1.ListPodsRequest) (*cellv1.ListPodsResponse, error) {
	return &cellv1.ListPodsResponse{}, nil
}

func (fakeCell) DrainPod(_ context.Context, req *cellv1.DrainPodRequest) (*cellv1.DrainPodResponse, error) {
	return nil, status.Errorf(codes.NotFound, "cell: no pod %q", req.GetId())
}

// newControlPlane serves a fake CellService's REST routes the way the
// daemons do: a gateway from NewGateway mounted with MountGateway on a mux
// wrapped in OpenAIErrors, next to one data-plane route.
func newControlPlane(t *testing.T) *httptest.Server {
	t.Helper()
	gw := NewGateway()
	if err := cellv1.RegisterCellServiceHandlerServer(context.Background(), gw, fakeCell{}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	if err := MountGateway(mux, gw, cellv1.File_api_cell_v1_cell_proto.Services().ByName("CellService")); err != nil {
		t.Fatal(err)
	}
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "{}") })
	srv := httptest.NewServer(OpenAIErrors(mux))
	t.Cleanup(srv.Close)
	return srv
}

// TestControlPlaneErrorsAreOpenAIShaped checks every kind of answer of the
// REST control plane and the mux around it: successes pass, RPC errors,
// unknown paths and wrong methods are OpenAI error bodies with the status
// the gateway maps the code to, 404 and 405 (with Allow).
func TestControlPlaneErrorsAreOpenAIShaped(t *testing.T) {
	srv := newControlPlane(t)
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantCode                 string // "" for a success
		wantAllow                string
		wantMsg                  string
	}{
		{"rpc success", "GET", "/v1/cell/pods", "", 200, "", "", ""},
		{"head of a GET route", "HEAD", "/v1/cell/pods", "", 200, "", "", ""},
		{"rpc NotFound", "POST", "/v1/cell/pods/p9:drain", "{}", 404, "not_found", "", `cell: no pod "p9"`},
		{"rpc Unimplemented", "GET", "/v1/cell/state", "", 501, "unimplemented", "", "not implemented"},
		{"bad request body", "POST", "/v1/cell/route", "{not json", 400, "invalid_argument", "", ""},
		{"unknown control path", "GET", "/v1/cell/nope", "", 404, "not_found", "", "no endpoint GET /v1/cell/nope"},
		{"route without its verb", "POST", "/v1/cell/pods/p9", "{}", 404, "not_found", "", "no endpoint POST /v1/cell/pods/p9"},
		{"unknown path", "GET", "/v2/anything", "", 404, "not_found", "", "no endpoint GET /v2/anything"},
		{"wrong method on a control route", "DELETE", "/v1/cell/pods", "", 405, "method_not_allowed", "GET, HEAD", ""},
		{"wrong method on a verb route", "GET", "/v1/cell/pods/p9:drain", "", 405, "method_not_allowed", "POST", ""},
		{"wrong method on the data plane", "PUT", "/v1/completions", "", 405, "method_not_allowed", "POST", "method PUT is not allowed on /v1/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status: got %d (%s), want %d", resp.StatusCode, data, tt.wantStatus)
			}
			if got := resp.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow: got %q, want %q", got, tt.wantAllow)
			}
			if tt.wantCode == "" {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type: got %q, want application/json", ct)
			}
			var eb openai.ErrorBody
			if err := json.Unmarshal(data, &eb); err != nil {
				t.Fatalf("body %s is not an OpenAI error: %v", data, err)
			}
			wantType := openai.TypeForStatus(tt.wantStatus)
			if string(eb.Error.Code) != `"`+tt.wantCode+`"` || eb.Error.Type != wantType || eb.Error.Message == "" ||
				!strings.Contains(eb.Error.Message, tt.wantMsg) {
				t.Errorf("body: got %s, want code %q, type %s, message containing %q", data, tt.wantCode, wantType, tt.wantMsg)
			}
		})
	}
}

// TestOpenAIErrorsKeepsRedirects checks that the mux's own redirects (an
// unclean path) are relayed, not turned into errors.
func TestOpenAIErrorsKeepsRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/{id...}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.PathValue("id")) })
	h := OpenAIErrors(mux)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1//models/x", nil))
	if rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != "/v1/models/x" {
		t.Errorf("unclean path: got %d Location %q, want 307 to /v1/models/x", rec.Code, rec.Header().Get("Location"))
	}
	// A matched pattern gets its path values.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/models/org/model-7b", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "org/model-7b" {
		t.Errorf("matched: got %d %q, want 200 org/model-7b", rec.Code, rec.Body.String())
	}
}

func TestGatewayPatterns(t *testing.T) {
	got, err := GatewayPatterns(cellv1.File_api_cell_v1_cell_proto.Services().ByName("CellService"),
		globalv1.File_api_global_v1_global_proto.Services().ByName("GlobalService"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /v1/cell/pods", "GET /v1/cell/state", "POST /v1/cell/pods/{v3}", "POST /v1/cell/route",
		"POST /v1/global/route", "GET /v1/global/cells", "POST /v1/global/cells/{v3}"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMuxPattern(t *testing.T) {
	tests := []struct {
		method, tmpl, want, wantErr string
	}{
		{"GET", "/v1/a", "GET /v1/a", ""},
		{"POST", "/v1/a/{id}:drain", "POST /v1/a/{v2}", ""},
		{"GET", "/v1/a/{id=*}/b", "GET /v1/a/{v2}/b", ""},
		{"GET", "/v1/files/{path=**}", "GET /v1/files/{v2...}", ""},
		{"POST", "/v1/things:batch", "POST /v1/things:batch", ""},
		{"GET", "v1/a", "", "does not start with /"},
		{"GET", "/v1/x{id}", "", "whole-segment"},
		{"GET", "/v1/{id}x", "", "text after a variable"},
		{"GET", "/v1/{name=projects/*}", "", "whole-segment"},
		{"GET", "/v1/{p=**}/x", "", "not supported"},
	}
	for _, tt := range tests {
		got, err := muxPattern(tt.method, tt.tmpl)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("muxPattern(%q) = %q, %v; want an error about %q", tt.tmpl, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("muxPattern(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
		http.NewServeMux().Handle(got, http.NotFoundHandler()) // panics on a bad pattern
	}
}

func TestCodeName(t *testing.T) {
	for c, want := range map[codes.Code]string{codes.NotFound: "not_found", codes.InvalidArgument: "invalid_argument",
		codes.Unavailable: "unavailable", codes.DeadlineExceeded: "deadline_exceeded", codes.FailedPrecondition: "failed_precondition"} {
		if got := CodeName(c); got != want {
			t.Errorf("CodeName(%v) = %q, want %q", c, got, want)
		}
	}
}

// BenchmarkOpenAIErrors measures what the wrapper adds to a matched request
// (one extra pattern lookup) against the bare mux.
func BenchmarkOpenAIErrors(b *testing.B) {
	mux := http.NewServeMux()
	for _, p := range []string{"GET /metrics", "GET /healthz", "GET /readyz", "POST /v1/chat/completions", "GET /v1/models",
		"GET /v1/models/{id...}", "GET /v1/cell/pods", "POST /v1/cell/pods/{id}"} {
		mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
	}
	mux.HandleFunc("POST /v1/completions", func(http.ResponseWriter, *http.Request) {})
	req := httptest.NewRequest("POST", "/v1/completions", nil)
	w := httptest.NewRecorder()
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"mux", mux}, {"wrapped", OpenAIErrors(mux)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.h.ServeHTTP(w, req)
			}
		})
	}
}
