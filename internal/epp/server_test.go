package epp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// upstream is a pod that echoes the body it got in an SSE stream of frames.
func upstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		buf.ReadFrom(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Got-Length", fmt.Sprint(buf.Len()))
		w.Header().Set("X-Got-Destination", r.Header.Get(DestinationKey))
		for i := range 3 {
			fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hello there, a prompt long enough to cut"}],"stream":true,"cache_salt":"s1"}`

func newTestServer(t *testing.T, p Picker, opts ...Option) extprocv3.ExternalProcessorClient {
	t.Helper()
	cfg := DefaultConfig()
	cfg.MaxBodyBytes = 4096
	s, err := NewServer(cfg, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return extprocv3.NewExternalProcessorClient(serve(t, s, NewHealth(nil)))
}

func TestPickRoutesAndFollowsResponse(t *testing.T) {
	up := upstream(t)
	addr := strings.TrimPrefix(up.URL, "http://")
	ex := &recExchange{}
	var got *Request
	c := newTestServer(t, PickerFunc(func(ctx context.Context, r *Request) (*Result, error) {
		got = r
		return &Result{Endpoints: []string{addr, "127.0.0.1:1"}, Header: http.Header{"X-Hint": {"h"}}, Remove: []string{"Authorization"}, Exchange: ex}, nil
	}))
	for _, frames := range []int{1, 3, 7} {
		t.Run(fmt.Sprint(frames, "frames"), func(t *testing.T) {
			*ex = recExchange{}
			out, err := epptest.Do(context.Background(), c, epptest.Call{Method: "POST", Path: "/v1/chat/completions?x=1",
				Header: http.Header{"Authorization": {"Bearer k"}}, Body: []byte(chatBody), Frames: frames, ResponseTrailers: true})
			if err != nil {
				t.Fatal(err)
			}
			if out.Immediate != nil {
				t.Fatalf("got immediate response %v, want a pick", out.Immediate)
			}
			want := addr + ",127.0.0.1:1"
			if out.Destination != want || out.MetadataDestination != want {
				t.Fatalf("destination header %q metadata %q, want both %q", out.Destination, out.MetadataDestination, want)
			}
			if !out.ClearRouteCache || out.SetHeaders["x-hint"] != "h" || len(out.RemoveHeaders) != 1 || out.RemoveHeaders[0] != "authorization" {
				t.Fatalf("header changes: clear %v set %v remove %v", out.ClearRouteCache, out.SetHeaders, out.RemoveHeaders)
			}
			if string(out.Forwarded) != chatBody || !out.ForwardedEnd {
				t.Fatalf("forwarded body %q end %v, want the body unchanged and ended", out.Forwarded, out.ForwardedEnd)
			}
			if got.Kind != openai.KindChat || got.OpenAI.Model != "m" || !got.OpenAI.Stream || got.OpenAI.CacheSalt != "s1" || got.Path != "/v1/chat/completions" {
				t.Fatalf("picker saw kind %v model %q stream %v salt %q path %q", got.Kind, got.OpenAI.Model, got.OpenAI.Stream, got.OpenAI.CacheSalt, got.Path)
			}
			if got.Header.Get("Authorization") != "Bearer k" || got.HasSubset {
				t.Fatalf("picker saw headers %v subset %v", got.Header, got.HasSubset)
			}
			if out.Served != addr || out.Status != 200 || out.ResponseSetHeaders["x-test-served"] != addr {
				t.Fatalf("served %q status %d response headers %v", out.Served, out.Status, out.ResponseSetHeaders)
			}
			if !strings.HasSuffix(string(out.Response), "data: [DONE]\n\n") || !out.ResponseTrailersAnswered {
				t.Fatalf("response %q trailers answered %v", out.Response, out.ResponseTrailersAnswered)
			}
			eventually(t, "the exchange to finish", func() bool { return len(ex.finished()) == 1 })
			if f := ex.finished(); !f[0] || string(ex.body) != string(out.Response) || ex.served[0] != addr || ex.statuses[0] != 200 {
				t.Fatalf("exchange: finish %v body %q served %v statuses %v", f, ex.body, ex.served, ex.statuses)
			}
		})
	}
}

func TestRewrittenBodyHasContentLength(t *testing.T) {
	up := upstream(t)
	addr := strings.TrimPrefix(up.URL, "http://")
	big := bytes.Repeat([]byte("x"), 2*BodyChunkBytes+10)
	c := newTestServer(t, PickerFunc(func(ctx context.Context, r *Request) (*Result, error) {
		return &Result{Endpoints: []string{addr}, Body: big}, nil
	}))
	out, err := epptest.Do(context.Background(), c, epptest.Call{Method: "POST", Path: "/v1/completions", Body: []byte(`{"model":"m","prompt":"p"}`), Frames: 2})
	if err != nil {
		t.Fatal(err)
	}
	if out.SetHeaders["content-length"] != fmt.Sprint(len(big)) || !bytes.Equal(out.Forwarded, big) || out.RequestBodyFrames != 3 {
		t.Fatalf("content-length %q, forwarded %d bytes in %d frames, want %d bytes in 3", out.SetHeaders["content-length"], len(out.Forwarded), out.RequestBodyFrames, len(big))
	}
	if out.Status != 200 {
		t.Fatalf("status %d", out.Status)
	}
}

// decodeError checks an ImmediateResponse's OpenAI error body.
func decodeError(t *testing.T, ir *extprocv3.ImmediateResponse, status int, code string) {
	t.Helper()
	if ir == nil {
		t.Fatalf("got a pick, want an immediate %d", status)
	}
	if int(ir.GetStatus().GetCode()) != status {
		t.Fatalf("status %d, want %d (body %s)", ir.GetStatus().GetCode(), status, ir.GetBody())
	}
	var body struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Param   json.RawMessage `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(ir.GetBody(), &body); err != nil || body.Error.Message == "" || body.Error.Type == "" || body.Error.Param == nil {
		t.Fatalf("body %s is not OpenAI's error shape (%v)", ir.GetBody(), err)
	}
	if code != "" && string(body.Error.Code) != `"`+code+`"` {
		t.Fatalf("code %s, want %q", body.Error.Code, code)
	}
	ct := ""
	for _, h := range ir.GetHeaders().GetSetHeaders() {
		if h.GetHeader().GetKey() == "content-type" {
			ct = string(h.GetHeader().GetRawValue())
		}
	}
	if !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content-type %q", ct)
	}
}

func TestRefusals(t *testing.T) {
	custom := Answer(func(w http.ResponseWriter) {
		openai.WriteErrorBody(w, http.StatusNotFound, openai.NewErrorBody(openai.TypeInvalidRequest, "no such model", "model", "model_not_found"))
	})
	cases := []struct {
		name   string
		err    error
		body   string
		status int
		code   string
	}{
		{"no endpoint", ErrNoEndpoint, chatBody, 503, "no_pod_available"},
		{"shed", ErrShed, chatBody, 429, "request_shed"},
		{"picker answer", fmt.Errorf("wrapped: %w", custom), chatBody, 404, "model_not_found"},
		{"other error", fmt.Errorf("boom"), chatBody, 500, "routing_failure"},
		{"bad body", nil, `{"model":`, 400, ""},
		{"no messages", nil, `{"model":"m"}`, 400, ""},
		{"too large", nil, `{"model":"m","messages":"` + strings.Repeat("a", 5000) + `"}`, 413, "body_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := &recExchange{}
			var calls atomic.Int32
			c := newTestServer(t, PickerFunc(func(ctx context.Context, r *Request) (*Result, error) {
				calls.Add(1)
				return &Result{Exchange: ex}, tc.err
			}))
			out, err := epptest.Do(context.Background(), c, epptest.Call{Method: "POST", Path: "/v1/chat/completions", Body: []byte(tc.body), Frames: 4})
			if err != nil {
				t.Fatal(err)
			}
			decodeError(t, out.Immediate, tc.status, tc.code)
			if tc.err == nil && calls.Load() != 0 {
				t.Fatalf("the picker was asked about a refused body")
			}
			if tc.err != nil {
				eventually(t, "the exchange to finish", func() bool { return len(ex.finished()) == 1 })
				if ex.finished()[0] {
					t.Fatalf("a refused request's exchange finished complete")
				}
			}
		})
	}
}

func TestSubsetHint(t *testing.T) {
	var got *Request
	c := newTestServer(t, PickerFunc(func(ctx context.Context, r *Request) (*Result, error) {
		got = r
		return nil, ErrNoEndpoint
	}))
	for _, asString := range []bool{false, true} {
		out, err := epptest.Do(context.Background(), c, epptest.Call{Method: "POST", Path: "/v1/completions", Body: []byte(`{"model":"m","prompt":"p"}`),
			Subset: []string{"10.0.0.1:8000", " 10.0.0.2"}, SubsetString: asString})
		if err != nil {
			t.Fatal(err)
		}
		decodeError(t, out.Immediate, 503, "no_pod_available")
		if !got.HasSubset || len(got.Subset) != 2 {
			t.Fatalf("string form %v: subset %v has %v", asString, got.Subset, got.HasSubset)
		}
		for addr, want := range map[string]bool{"10.0.0.1:8000": true, "10.0.0.1:8001": false, "10.0.0.2:9": true, "10.0.0.3:8000": false} {
			if got.InSubset(addr) != want {
				t.Fatalf("InSubset(%q) = %v, want %v", addr, !want, want)
			}
		}
	}
	// An empty subset allows nothing.
	if _, err := epptest.Do(context.Background(), c, epptest.Call{Method: "POST", Path: "/v1/completions", Body: []byte(`{"model":"m","prompt":"p"}`), Subset: []string{}}); err != nil {
		t.Fatal(err)
	}
	if !got.HasSubset || got.InSubset("10.0.0.1:8000") {
		t.Fatalf("an empty subset allowed an endpoint")
	}
}

func TestRequestTrailersAndBodiless(t *testing.T) {
	up := upstream(t)
	addr := strings.TrimPrefix(up.URL, "http://")
	var bodies []string
	c := newTestServer(t, PickerFunc(func(ctx context.Context, r *Request) (*Result, error) {
		bodies = append(bodies, string(r.Body))
		return &Result{Endpoints: []string{addr}}, nil
	}))
	out, err := epptest.Do(context.Background(), c, epptest.Call{Method: "POST", Path: "/v1/completions", Body: []byte(`{"model":"m","prompt":"p"}`), Frames: 2, Trailers: true})
	if err != nil {
		t.Fatal(err)
	}
	if !out.RequestTrailersAnswered || string(out.Forwarded) != `{"model":"m","prompt":"p"}` || out.ForwardedEnd || out.Status != 200 {
		t.Fatalf("trailers answered %v forwarded %q end %v status %d", out.RequestTrailersAnswered, out.Forwarded, out.ForwardedEnd, out.Status)
	}
	out, err = epptest.Do(context.Background(), c, epptest.Call{Method: "GET", Path: "/v1/models"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Destination != addr || out.RequestBodyFrames != 0 || out.Status != 200 || bodies[1] != "" {
		t.Fatalf("bodiless: destination %q body frames %d status %d", out.Destination, out.RequestBodyFrames, out.Status)
	}
}

func TestCancelMidStream(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; ; i++ {
			fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-release:
				return
			default:
			}
			if i > 1000 {
				return
			}
		}
	}))
	defer up.Close()
	defer close(release)
	ex := &recExchange{}
	c := newTestServer(t, PickerFunc(func(ctx context.Context, r *Request) (*Result, error) {
		return &Result{Endpoints: []string{strings.TrimPrefix(up.URL, "http://")}, Exchange: ex}, nil
	}))
	out, err := epptest.Do(context.Background(), c, epptest.Call{Method: "POST", Path: "/v1/completions", Body: []byte(`{"model":"m","prompt":"p","stream":true}`), CancelAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Cancelled {
		t.Fatal("the call was not cancelled")
	}
	eventually(t, "the exchange to finish", func() bool { return len(ex.finished()) == 1 })
	if ex.finished()[0] || len(ex.served) != 1 || len(ex.body) == 0 {
		t.Fatalf("exchange after a cancel: finish %v served %v body %d bytes", ex.finished(), ex.served, len(ex.body))
	}
}

type fakeAdmitter struct{ released atomic.Int32 }

func (a *fakeAdmitter) AdmitHeader(h http.Header) (auth.Principal, func(), error) {
	if h.Get("Authorization") != "Bearer good" {
		return auth.Principal{}, nil, &auth.Error{Err: auth.ErrInvalidKey}
	}
	return auth.Principal{KeyID: "k", Scopes: auth.ScopeAll}, func() { a.released.Add(1) }, nil
}

func TestAdmitter(t *testing.T) {
	up := upstream(t)
	adm := &fakeAdmitter{}
	var principal auth.Principal
	c := newTestServer(t, PickerFunc(func(ctx context.Context, r *Request) (*Result, error) {
		principal = r.Principal
		return &Result{Endpoints: []string{strings.TrimPrefix(up.URL, "http://")}}, nil
	}), WithAdmitter(adm))
	out, err := epptest.Do(context.Background(), c, epptest.Call{Method: "POST", Path: "/v1/completions", Header: http.Header{"Authorization": {"Bearer bad"}}, Body: []byte(`{"model":"m","prompt":"p"}`)})
	if err != nil {
		t.Fatal(err)
	}
	decodeError(t, out.Immediate, 401, "invalid_api_key")
	out, err = epptest.Do(context.Background(), c, epptest.Call{Method: "POST", Path: "/v1/completions", Header: http.Header{"Authorization": {"Bearer good"}}, Body: []byte(`{"model":"m","prompt":"p"}`)})
	if err != nil || out.Status != 200 {
		t.Fatalf("admitted call: %v status %d", err, out.Status)
	}
	if principal.KeyID != "k" {
		t.Fatalf("the picker saw principal %+v", principal)
	}
	eventually(t, "the admission to be released", func() bool { return adm.released.Load() == 1 })
}
