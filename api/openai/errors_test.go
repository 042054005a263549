package openai

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, http.StatusBadGateway, TypeServer, "upstream failed")
	if rec.Code != http.StatusBadGateway {
		t.Errorf("status: got %d, want %d", rec.Code, http.StatusBadGateway)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	want := `{"error":{"message":"upstream failed","type":"server_error","param":null,"code":null}}`
	if got := rec.Body.String(); got != want {
		t.Errorf("body: got %s, want %s", got, want)
	}
}

func TestWriteRequestError(t *testing.T) {
	_, err := ParseCompletion([]byte(`{"prompt":[1,-1]}`))
	rec := httptest.NewRecorder()
	WriteRequestError(rec, err)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("status: got %d, want 400", rec.Code)
	}
	var b ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	if b.Error.Type != TypeInvalidRequest || b.Error.Param == nil || *b.Error.Param != "prompt" {
		t.Errorf("body: got %s, want type invalid_request_error and param prompt", rec.Body.String())
	}
	// The code of an engine's error may be a number (vLLM) or a string.
	var vllm ErrorBody
	if err := json.Unmarshal([]byte(`{"error":{"message":"m","type":"BadRequestError","param":null,"code":400}}`), &vllm); err != nil {
		t.Fatal(err)
	}
	if string(vllm.Error.Code) != "400" {
		t.Errorf("vLLM code: got %s, want 400", vllm.Error.Code)
	}
}

func TestReadBody(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		limit   int64
		unknown bool // send without Content-Length
		wantErr error
	}{
		{"fits", `{"prompt":"x"}`, 100, false, nil},
		{"too large by Content-Length", strings.Repeat("a", 101), 100, false, ErrBodyTooLarge},
		{"too large while reading", strings.Repeat("a", 101), 100, true, ErrBodyTooLarge},
		{"exactly the limit", strings.Repeat("a", 100), 100, true, nil},
		{"exactly the limit by Content-Length", strings.Repeat("a", 100), 100, false, nil},
		{"shorter than its Content-Length", `{"prompt":`, 100, false, ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(tt.body))
			if tt.unknown {
				r.ContentLength = -1
			}
			if tt.wantErr == ErrInvalidRequest {
				r.ContentLength = int64(len(tt.body)) + 10 // the client hung up early
			}
			got, err := ReadBody(httptest.NewRecorder(), r, tt.limit)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ReadBody: got error %v, want %v", err, tt.wantErr)
			}
			if err == nil && string(got) != tt.body {
				t.Errorf("ReadBody: got %q, want %q", got, tt.body)
			}
			want := http.StatusRequestEntityTooLarge
			if tt.wantErr == ErrInvalidRequest {
				want = http.StatusBadRequest
			}
			var re *RequestError
			if err != nil && (!errors.As(err, &re) || re.Status() != want) {
				t.Errorf("ReadBody: got %v, want a *RequestError with status %d", err, want)
			}
		})
	}
}
