package cell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestRetrieveModel checks GET /v1/models/{id} at the cell: the pod's entry
// in OpenAI's shape (ids with a slash too), and OpenAI's 404 for a model no
// pod serves.
func TestRetrieveModel(t *testing.T) {
	c := cellWithPods(t, []*fakePod{newFakePod(t, "a")}, nil)
	base := "http://" + c.HTTPAddr() + "/v1/models/"
	tests := []struct {
		name, id   string
		wantStatus int
		wantBody   string
	}{
		{"base model", "m", 200, `{"id":"m","object":"model","created":1700000000,"owned_by":"a"}`},
		{"adapter with a slash", "org/m-lora", 200, `{"id":"org/m-lora","object":"model","created":1700000001,"owned_by":"a","parent":"m"}`},
		{"adapter with an escaped slash", url.PathEscape("org/m-lora"), 200, `{"id":"org/m-lora","object":"model","created":1700000001,"owned_by":"a","parent":"m"}`},
		{"unknown model", "gpt-9", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := servertest.Do(t, "GET", base+tt.id, "")
			if status != tt.wantStatus {
				t.Fatalf("status: got %d (%s), want %d", status, body, tt.wantStatus)
			}
			if tt.wantBody != "" && body != tt.wantBody {
				t.Errorf("body: got %s, want %s", body, tt.wantBody)
			}
			if status == 404 {
				e := servertest.ErrorBody(t, body)
				if string(e.Code) != `"model_not_found"` || e.Type != openai.TypeInvalidRequest || !strings.Contains(e.Message, "gpt-9") {
					t.Errorf("body: got %s, want model_not_found naming gpt-9", body)
				}
			}
		})
	}
}

// TestCellHTTPErrorsAreOpenAIShaped checks the cell's unknown paths and
// wrong methods, data plane and control plane, and a control-plane error.
func TestCellHTTPErrorsAreOpenAIShaped(t *testing.T) {
	c := cellWithPods(t, []*fakePod{newFakePod(t, "a")}, nil)
	base := "http://" + c.HTTPAddr()
	tests := []struct {
		method, path, body string
		wantStatus         int
		wantCode           string
		wantAllow          string
	}{
		{"GET", "/v1/nope", "", 404, "not_found", ""},
		{"GET", "/", "", 404, "not_found", ""},
		{"PUT", "/v1/completions", "{}", 405, "method_not_allowed", "POST"},
		{"GET", "/v1/chat/completions", "", 405, "method_not_allowed", "POST"},
		{"POST", "/v1/models", "{}", 405, "method_not_allowed", "GET, HEAD"},
		{"DELETE", "/v1/models/m", "", 405, "method_not_allowed", "GET, HEAD"},
		{"POST", "/metrics", "", 405, "method_not_allowed", "GET, HEAD"},
		{"GET", "/v1/cell/nope", "", 404, "not_found", ""},
		{"DELETE", "/v1/cell/pods", "", 405, "method_not_allowed", "GET, HEAD"},
		{"GET", "/v1/cell/route", "", 405, "method_not_allowed", "POST"},
		{"POST", "/v1/cell/pods/ghost:drain", "{}", 404, "not_found", ""},
		{"POST", "/v1/cell/route", "{}", 400, "invalid_argument", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			status, hdr, body := servertest.Do(t, tt.method, base+tt.path, tt.body)
			if status != tt.wantStatus || hdr.Get("Allow") != tt.wantAllow {
				t.Fatalf("got %d Allow %q (%s), want %d Allow %q", status, hdr.Get("Allow"), body, tt.wantStatus, tt.wantAllow)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type: got %q, want application/json", ct)
			}
			if e := servertest.ErrorBody(t, body); string(e.Code) != `"`+tt.wantCode+`"` || e.Message == "" || e.Type != openai.TypeInvalidRequest {
				t.Errorf("body: got %s, want code %q and type invalid_request_error", body, tt.wantCode)
			}
		})
	}
}

// TestUpstreamFailuresHideInternals checks what a client sees when the
// cell's pods fail: a pod that refuses the request's tokenization has its
// own OpenAI error relayed with its status (not nested as an escaped
// string), and a pod that cannot be reached gives a 502 whose message names
// no address; the cell's log has the details.
func TestUpstreamFailuresHideInternals(t *testing.T) {
	pod := newFakePod(t, "a")
	dead := deadAddr(t)
	var logs servertest.LogBuffer
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "a", Address: pod.addr(), KVBlocks: 10000}, {ID: "gone", Address: dead, KVBlocks: 10000}}
	c, err := New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + c.HTTPAddr()
	waitFor(t, "healthz", func() bool { code, _ := get(t, base+"/healthz"); return code == 200 })

	// A chat for a model the pods do not serve: the pod's /tokenize says
	// 404 with an OpenAI body, which the client gets as it is.
	status, _, body := servertest.Do(t, "POST", base+"/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusNotFound {
		t.Fatalf("unknown model: got %d %s, want the pod's 404", status, body)
	}
	e := servertest.ErrorBody(t, body)
	if e.Message != "The model nope does not exist." || e.Type != "NotFoundError" || string(e.Code) != "404" {
		t.Errorf("unknown model: got %s, want the pod's error as it is", body)
	}

	// Drain the live pod: requests go to the dead one only.
	if status, _, body := servertest.Do(t, "POST", base+"/v1/cell/pods/a:drain", "{}"); status != 200 {
		t.Fatalf("drain: got %d %s", status, body)
	}
	resp, body := completion(t, base, promptTokens(3), false, nil)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("dead pod: got %d %s, want 502", resp.StatusCode, body)
	}
	e = servertest.ErrorBody(t, body)
	if string(e.Code) != `"upstream_failure"` || e.Type != openai.TypeServer {
		t.Errorf("dead pod: got %s, want server_error upstream_failure", body)
	}
	waitFor(t, "the failure in the log", func() bool { return strings.Contains(logs.String(), dead) })
	for _, internal := range []string{dead, "dial tcp", "gone", "127.0.0.1", `\"`} {
		if strings.Contains(body, internal) {
			t.Errorf("dead pod: client body %s contains %q", body, internal)
		}
	}
}

// TestDecideFailure checks how each planning error is answered.
func TestDecideFailure(t *testing.T) {
	podErr := &tokenizer.StatusError{URL: "http://10.0.0.7:8000/tokenize", Status: 400,
		Body: []byte(`{"object":"error","message":"prompt too long","type":"BadRequestError","param":null,"code":400}`)}
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantType   string
		wantMsg    string
	}{
		{"no candidate", fmt.Errorf("pipeline: profile x: %w", pipeline.ErrNoCandidate), 503, openai.TypeServer, "no pod of the cell"},
		{"pod refused tokenization", fmt.Errorf("pipeline: prepare tokens: %w", podErr), 400, "BadRequestError", "prompt too long"},
		{"pod refused with HTML", &tokenizer.StatusError{URL: "http://10.0.0.7:8000/tokenize", Status: 403, Body: []byte("<html>")},
			403, openai.TypeInvalidRequest, "refused to tokenize"},
		{"pod failed tokenization", &tokenizer.StatusError{URL: "http://10.0.0.7:8000/tokenize", Status: 500, Body: []byte("boom")},
			502, openai.TypeServer, "failed to tokenize"},
		{"tokenize unreachable", fmt.Errorf("%w: POST http://10.0.0.7:8000/tokenize: dial tcp 10.0.0.7:8000: connection refused", tokenizer.ErrRemote),
			502, openai.TypeServer, "failed to tokenize"},
		{"tokenize timeout", fmt.Errorf("%w: POST http://10.0.0.7:8000/tokenize: %w", tokenizer.ErrRemote, context.DeadlineExceeded),
			504, openai.TypeServer, "timed out"},
		{"no pod to tokenize", errNoTokenizePod, 503, openai.TypeServer, "tokenize"},
		{"no tokenizer", plugins.ErrNoTokenizer, 400, openai.TypeInvalidRequest, "send token ids"},
		{"unsupported message", fmt.Errorf("%w: role %q", tokenizer.ErrUnsupportedMessage, "tool"), 400, openai.TypeInvalidRequest, "chat template"},
		{"anything else", errors.New("plugins: something at 10.0.0.7"), 500, openai.TypeServer, "could not route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := decideFailure(tt.err)
			data, _ := json.Marshal(body)
			if status != tt.wantStatus || body.Error.Type != tt.wantType || !strings.Contains(body.Error.Message, tt.wantMsg) {
				t.Errorf("got %d %s, want %d type %s message containing %q", status, data, tt.wantStatus, tt.wantType, tt.wantMsg)
			}
			if strings.Contains(string(data), "10.0.0.7") {
				t.Errorf("got %s: names an internal address", data)
			}
		})
	}
}
