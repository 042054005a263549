package edge

import (
	"errors"
	"flag"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// TestAnswers checks the one mapping of errors to HTTP and gRPC answers.
func TestAnswers(t *testing.T) {
	tests := []struct {
		err        error
		status     int
		code       codes.Code
		oaiType    string
		oaiCode    string
		retryAfter string
	}{
		{&auth.Error{Err: auth.ErrMissingKey}, 401, codes.Unauthenticated, "invalid_request_error", "missing_api_key", ""},
		{&auth.Error{Err: auth.ErrInvalidKey}, 401, codes.Unauthenticated, "invalid_request_error", "invalid_api_key", ""},
		{&auth.Error{Err: auth.ErrForbidden, Need: auth.ScopeAdmin}, 403, codes.PermissionDenied, "invalid_request_error", "insufficient_scope", ""},
		{&auth.Error{Err: auth.ErrRateLimited, RetryAfter: 3 * time.Second}, 429, codes.ResourceExhausted, "requests", "rate_limit_exceeded", "3"},
		{&auth.Error{Err: auth.ErrRateLimited, RetryAfter: 1500 * time.Millisecond}, 429, codes.ResourceExhausted, "requests", "rate_limit_exceeded", "2"},
		{&auth.Error{Err: auth.ErrConcurrency, RetryAfter: time.Second}, 429, codes.ResourceExhausted, "requests", "rate_limit_exceeded", "1"},
		{&auth.Error{Err: auth.ErrReservedSalt}, 400, codes.InvalidArgument, "invalid_request_error", "invalid_cache_salt", ""},
		{&auth.Error{Err: auth.ErrPriority}, 400, codes.InvalidArgument, "invalid_request_error", "invalid_priority", ""},
		{ErrBodyTooLarge, 413, codes.ResourceExhausted, "invalid_request_error", "body_too_large", ""},
		{ErrHeaderTooLarge, 431, codes.ResourceExhausted, "invalid_request_error", "headers_too_large", ""},
		{ErrBodyTimeout, 408, codes.DeadlineExceeded, "invalid_request_error", "request_timeout", ""},
		{ErrOverloaded, 503, codes.Unavailable, "server_error", "server_overloaded", "1"},
		{errors.New("something else"), 500, codes.Internal, "server_error", "internal_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.oaiCode, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteHTTP(rec, tt.err)
			d := errorOf(t, rec.Body.String())
			if rec.Code != tt.status || d.Type != tt.oaiType || codeOf(d) != tt.oaiCode || rec.Header().Get("Retry-After") != tt.retryAfter {
				t.Errorf("HTTP: got %d %s Retry-After %q, want %d type %s code %s Retry-After %q",
					rec.Code, rec.Body, rec.Header().Get("Retry-After"), tt.status, tt.oaiType, tt.oaiCode, tt.retryAfter)
			}
			if HTTPStatus(tt.err) != tt.status {
				t.Errorf("HTTPStatus: got %d, want %d", HTTPStatus(tt.err), tt.status)
			}
			if got := status.Code(GRPCError(tt.err)); got != tt.code {
				t.Errorf("gRPC: got %v, want %v", got, tt.code)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "[::1]:80": true, "localhost:80": true, "127.1.2.3:0": true,
		":80": false, "0.0.0.0:80": false, "[::]:80": false, "10.0.0.5:80": false, "example.com:80": false, "junk": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestWarnIfExposed(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, nil))
	ls := []Listener{{"http", "127.0.0.1:8080"}, {"grpc", ":9090"}}
	if n := WarnIfExposed(log, true, ls...); n != 0 || b.Len() != 0 {
		t.Errorf("authenticated: warned %d times: %s", n, b.String())
	}
	if n := WarnIfExposed(log, false, ls...); n != 1 || !strings.Contains(b.String(), "listener=grpc") || strings.Contains(b.String(), "listener=http") {
		t.Errorf("unauthenticated: warned %d times: %s; want one warning, about grpc", n, b.String())
	}
}

func TestBindFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	apply := BindFlags(fs, DefaultLimits())
	if err := fs.Parse([]string{"--max-body-bytes", "2048", "--body-timeout", "5s", "--max-concurrent-streams=7"}); err != nil {
		t.Fatal(err)
	}
	got := Limits{MaxHeaderBytes: 1, ReadHeaderTimeout: 2, IdleTimeout: 3} // a configuration file's values
	apply(&got)
	want := Limits{MaxBodyBytes: 2048, MaxHeaderBytes: 1, ReadHeaderTimeout: 2, BodyTimeout: 5 * time.Second, IdleTimeout: 3, MaxConcurrentStreams: 7}
	if got != want {
		t.Errorf("got %+v, want %+v (only the flags given override)", got, want)
	}
}
