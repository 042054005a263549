package global

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestGlobalRetrieveModel checks GET /v1/models/{id} at the global tier: a
// cell's answer (from its pods' lists) in OpenAI's shape, OpenAI's 404 for
// an unknown model, and a 503 without cells.
func TestGlobalRetrieveModel(t *testing.T) {
	hits := &sync.Map{}
	a := startTestCell(t, "cell-a", hits)
	dir := &mutableDir{}
	dir.set(a.view(t))
	g := startGlobal(t, dir)
	base := "http://" + g.HTTPAddr() + "/v1/models/"

	status, _, body := servertest.Do(t, "GET", base+"m", "")
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); status != 200 || err != nil {
		t.Fatalf("GET m: got %d %s, want 200 and a model", status, body)
	}
	if m["id"] != "m" || m["object"] != "model" || m["created"] != float64(1700000000) || !strings.HasPrefix(m["owned_by"].(string), "cell-a-pod") {
		t.Errorf("GET m: got %s, want id m, object model, created and owned_by from the pod", body)
	}
	status, _, body = servertest.Do(t, "GET", base+"gpt-9", "")
	if e := servertest.ErrorBody(t, body); status != 404 || string(e.Code) != `"model_not_found"` {
		t.Errorf("GET gpt-9: got %d %s, want 404 model_not_found", status, body)
	}
	dir.set()
	status, _, body = servertest.Do(t, "GET", base+"m", "")
	if e := servertest.ErrorBody(t, body); status != 503 || string(e.Code) != `"no_cell_available"` {
		t.Errorf("GET m without cells: got %d %s, want 503 no_cell_available", status, body)
	}
}

// TestGlobalHTTPErrorsAreOpenAIShaped checks globald's unknown paths and
// wrong methods, data plane and control plane, and control-plane errors.
func TestGlobalHTTPErrorsAreOpenAIShaped(t *testing.T) {
	g := startGlobal(t, &mutableDir{})
	base := "http://" + g.HTTPAddr()
	tests := []struct {
		method, path, body string
		wantStatus         int
		wantCode           string
		wantAllow          string
		wantMsg            string
	}{
		{"GET", "/v1/nope", "", 404, "not_found", "", "no endpoint GET /v1/nope"},
		{"PUT", "/v1/chat/completions", "{}", 405, "method_not_allowed", "POST", ""},
		{"POST", "/v1/models/m", "{}", 405, "method_not_allowed", "GET, HEAD", ""},
		{"GET", "/v1/global/nope", "", 404, "not_found", "", ""},
		{"POST", "/v1/global/cells", "{}", 405, "method_not_allowed", "GET, HEAD", ""},
		{"GET", "/v1/global/route", "", 405, "method_not_allowed", "POST", ""},
		{"POST", "/v1/global/cells/ghost:drain", "{}", 404, "not_found", "", `global: no cell "ghost"`},
		{"POST", "/v1/global/route", "{}", 400, "invalid_argument", "", "needs token_ids, a prompt or messages"},
		{"POST", "/v1/global/route", `{"prompt":"hi"}`, 503, "unavailable", "", "no cell available"},
		{"POST", "/v1/completions", `{"model":"m","prompt":"hi"}`, 503, "no_cell_available", "", "no cell is available"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			status, hdr, body := servertest.Do(t, tt.method, base+tt.path, tt.body)
			if status != tt.wantStatus || hdr.Get("Allow") != tt.wantAllow {
				t.Fatalf("got %d Allow %q (%s), want %d Allow %q", status, hdr.Get("Allow"), body, tt.wantStatus, tt.wantAllow)
			}
			e := servertest.ErrorBody(t, body)
			if string(e.Code) != `"`+tt.wantCode+`"` || e.Type != openai.TypeForStatus(status) || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("body: got %s, want code %q, type %s, message containing %q", body, tt.wantCode, openai.TypeForStatus(status), tt.wantMsg)
			}
		})
	}
}

// TestHandoffFailureHidesCellAddresses checks that a hand-off that fails
// on every cell answers 502 without the cells' addresses.
func TestHandoffFailureHidesCellAddresses(t *testing.T) {
	hits := &sync.Map{}
	a := startTestCell(t, "cell-a", hits)
	broken := a.view(t)
	broken.HTTPAddr = "127.0.0.1:1"
	dir := &mutableDir{}
	dir.set(broken)
	g := startGlobal(t, dir)
	resp, body := post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": tokens(4, 64), "max_tokens": 1})
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("got %d %s, want 502", resp.StatusCode, body)
	}
	e := servertest.ErrorBody(t, body)
	if string(e.Code) != `"upstream_failure"` || e.Type != openai.TypeServer {
		t.Errorf("got %s, want server_error upstream_failure", body)
	}
	for _, internal := range []string{"127.0.0.1", "dial tcp", "cell-a", "connection refused"} {
		if strings.Contains(body, internal) {
			t.Errorf("client body %s contains %q", body, internal)
		}
	}
}
