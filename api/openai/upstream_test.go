package openai

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// vllmFlat is the error body of older vLLM servers.
const vllmFlat = `{"object":"error","message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`

func TestUpstreamErrorBody(t *testing.T) {
	nested := `{"error":{"message":"maximum context length is 4096 tokens","type":"BadRequestError","param":"prompt","code":400,"extra":1}}`
	tests := []struct {
		name     string
		status   int
		body     string
		wantSame bool   // relayed byte for byte
		wantMsg  string // else: the message of the body sent
		wantType string
		wantCode string
	}{
		{"OpenAI shape relayed as is", 400, nested, true, "", "", ""},
		{"vLLM flat shape nested", 404, vllmFlat, false, "The model `x` does not exist.", "NotFoundError", "404"},
		{"HTML replaced", 502, "<html><body>Bad Gateway from 10.0.0.7</body></html>", false, "the upstream server answered 502 Bad Gateway", TypeServer, `"upstream_error"`},
		{"plain text replaced", 500, "Traceback (most recent call last): ...", false, "the upstream server answered 500 Internal Server Error", TypeServer, `"upstream_error"`},
		{"empty 4xx replaced", 429, "", false, "the upstream server answered 429 Too Many Requests", TypeInvalidRequest, `"upstream_error"`},
		{"error without message replaced", 400, `{"error":{"type":"x"}}`, false, "the upstream server answered 400 Bad Request", TypeInvalidRequest, `"upstream_error"`},
		{"error as a string replaced", 400, `{"error":"boom at http://10.0.0.7:8000"}`, false, "the upstream server answered 400 Bad Request", TypeInvalidRequest, `"upstream_error"`},
		{"flat without type gets the status's", 503, `{"object":"error","message":"overloaded"}`, false, "overloaded", TypeServer, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UpstreamErrorBody(tt.status, []byte(tt.body))
			if tt.wantSame {
				if string(got) != tt.body {
					t.Fatalf("got %s, want the body as is: %s", got, tt.body)
				}
				return
			}
			var eb ErrorBody
			if err := json.Unmarshal(got, &eb); err != nil {
				t.Fatalf("got %s: not an OpenAI error body: %v", got, err)
			}
			if eb.Error.Message != tt.wantMsg || eb.Error.Type != tt.wantType || string(eb.Error.Code) != tt.wantCode {
				t.Errorf("got message %q type %q code %s, want %q %q %s", eb.Error.Message, eb.Error.Type, eb.Error.Code, tt.wantMsg, tt.wantType, tt.wantCode)
			}
			if strings.Contains(string(got), "10.0.0.7") {
				t.Errorf("got %s: the upstream's text leaked", got)
			}
		})
	}
}

func TestWriteNotFoundAndMethodNotAllowed(t *testing.T) {
	r := httptest.NewRequest(http.MethodPut, "/v1/completions", nil)
	rec := httptest.NewRecorder()
	WriteMethodNotAllowed(rec, r, "POST")
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "POST" {
		t.Errorf("405: got status %d Allow %q, want 405 and POST", rec.Code, rec.Header().Get("Allow"))
	}
	want := `{"error":{"message":"method PUT is not allowed on /v1/completions; allowed: POST","type":"invalid_request_error","param":null,"code":"method_not_allowed"}}`
	if got := rec.Body.String(); got != want {
		t.Errorf("405 body: got %s, want %s", got, want)
	}
	rec = httptest.NewRecorder()
	WriteNotFound(rec, httptest.NewRequest(http.MethodGet, "/v1/nope", nil))
	want = `{"error":{"message":"no endpoint GET /v1/nope","type":"invalid_request_error","param":null,"code":"not_found"}}`
	if rec.Code != http.StatusNotFound || rec.Body.String() != want {
		t.Errorf("404: got %d %s, want 404 %s", rec.Code, rec.Body.String(), want)
	}
}

// FuzzUpstreamErrorBody checks that whatever an upstream answers, the client
// gets an OpenAI error body with a message.
func FuzzUpstreamErrorBody(f *testing.F) {
	for _, s := range []string{vllmFlat, `{"error":{"message":"m","type":"t","param":null,"code":"c"}}`, `<html>`, ``,
		`{"error":{"message":1}}`, `{"object":"error","message":"m","code":{"x":[1]}}`, `{"error":{"message":"m","code":}}`} {
		f.Add(500, []byte(s))
	}
	f.Fuzz(func(t *testing.T, status int, data []byte) {
		got := UpstreamErrorBody(status, data)
		var eb struct {
			Error *struct {
				Message *string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(got, &eb); err != nil || eb.Error == nil || eb.Error.Message == nil {
			t.Fatalf("UpstreamErrorBody(%d, %q) = %s: not an OpenAI error body (%v)", status, data, got, err)
		}
	})
}
