package edge

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/api/openai"
)

// hardened serves handler behind Harden and NewHTTPServer with l on a
// wrapped listener, and returns its address and metrics.
func hardened(t *testing.T, l Limits, handler http.Handler) (string, *Metrics) {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(Harden(l, m, handler), l, nil)
	go srv.Serve(WrapListener(lis, l, m, nil))
	t.Cleanup(func() { srv.Close() })
	return lis.Addr().String(), m
}

// readBody is a handler that reads the body as the daemons do and answers
// its length.
var readBody = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, err := openai.ReadBody(w, r, 1<<20)
	if err != nil {
		openai.WriteRequestError(w, err)
		return
	}
	fmt.Fprint(w, len(body))
})

func testLimits() Limits {
	l := DefaultLimits()
	l.MaxBodyBytes = 4096
	l.MaxHeaderBytes = 4096
	l.ReadHeaderTimeout = 300 * time.Millisecond
	l.BodyTimeout = 300 * time.Millisecond
	l.IdleTimeout = 300 * time.Millisecond
	return l
}

func waitCounter(t *testing.T, what string, c prometheus.Collector, want float64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for counter(c) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %v, want %v", what, counter(c), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHardenSizes checks the size limits: headers (431), an announced body
// and a chunked one (413), and that a body of exactly the limit passes.
func TestHardenSizes(t *testing.T) {
	addr, m := hardened(t, testLimits(), readBody)
	tests := []struct {
		name       string
		header     string // extra header value of X-Pad
		body       string
		chunked    bool
		wantStatus int
		wantCode   string
	}{
		{"small", "", "hello", false, 200, ""},
		{"body at the limit", "", strings.Repeat("a", 4096), false, 200, ""},
		{"chunked body at the limit", "", strings.Repeat("a", 4096), true, 200, ""},
		{"headers over the limit", strings.Repeat("h", 5000), "x", false, 431, "headers_too_large"},
		{"announced body over the limit", "", strings.Repeat("a", 4097), false, 413, "body_too_large"},
		{"chunked body over the limit", "", strings.Repeat("a", 5000), true, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // unknown length: sent chunked
			}
			req, _ := http.NewRequest("POST", "http://"+addr+"/v1/completions", body)
			if tt.header != "" {
				req.Header.Set("X-Pad", tt.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, b, tt.wantStatus)
			}
			if tt.wantStatus == 200 && string(b) != strconv.Itoa(len(tt.body)) {
				t.Errorf("body length: got %s, want %d", b, len(tt.body))
			}
			if tt.wantCode != "" && codeOf(errorOf(t, string(b))) != tt.wantCode {
				t.Errorf("code: got %s, want %s", b, tt.wantCode)
			}
		})
	}
	if got := counter(m.limitHits.WithLabelValues(LimitHeaderSize)); got != 1 {
		t.Errorf("header_size hits: got %v, want 1", got)
	}
	if got := counter(m.limitHits.WithLabelValues(LimitBodySize)); got != 2 {
		t.Errorf("body_size hits: got %v, want 2", got)
	}
}

// TestHardenSlowBody checks that a client that sends its body too slowly
// is answered 408 and cut off, and that the body timeout does not bound a
// long streamed response once the body is in.
func TestHardenSlowBody(t *testing.T) {
	l := testLimits()
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			readBody(w, r)
			return
		}
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		for i := range 3 {
			fmt.Fprintf(w, "chunk %d\n", i)
			w.(http.Flusher).Flush()
			// The response lasts three body timeouts: the generation of a
			// long answer, which no read deadline may cut.
			select {
			case <-r.Context().Done():
				return
			case <-time.After(l.BodyTimeout):
			}
		}
	})
	addr, m := hardened(t, l, stream)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 408 || codeOf(errorOf(t, string(b))) != "request_timeout" {
		t.Fatalf("slow body: got %d %s, want 408 request_timeout", resp.StatusCode, b)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the connection of a slow body stayed open")
	}
	if got := counter(m.limitHits.WithLabelValues(LimitBodyTimeout)); got != 1 {
		t.Errorf("body_timeout hits: got %v, want 1", got)
	}

	resp, err = http.Post("http://"+addr+"/stream", "text/plain", strings.NewReader("prompt"))
	if err != nil {
		t.Fatal(err)
	}
	b, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "chunk 0\nchunk 1\nchunk 2\n" {
		t.Fatalf("streamed response: got %q, %v; want three chunks", b, err)
	}
}

// TestHardenConnectionTimeouts checks that the header and idle timeouts
// close connections and are counted apart.
func TestHardenConnectionTimeouts(t *testing.T) {
	addr, m := hardened(t, testLimits(), readBody)
	// Half a request head, then nothing.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n")
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	io.ReadAll(c) // the server closes it
	waitCounter(t, "header_timeout hits", m.limitHits.WithLabelValues(LimitHeaderTimeout), 1)

	// A whole request, then idle keep-alive.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
	c2.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c2)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("keep-alive request: %v %v", resp, err)
	}
	io.ReadAll(resp.Body)
	io.ReadAll(br) // the server closes the idle connection
	waitCounter(t, "idle_timeout hits", m.limitHits.WithLabelValues(LimitIdleTimeout), 1)
	if got := counter(m.limitHits.WithLabelValues(LimitHeaderTimeout)); got != 1 {
		t.Errorf("header_timeout hits: got %v, want 1 (the idle close is not one)", got)
	}
}

// TestHardenStreams checks the limit of concurrent requests: past it, 503
// with Retry-After; health and metrics still answer.
func TestHardenStreams(t *testing.T) {
	l := testLimits()
	l.MaxConcurrentStreams = 1
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-release
		}
		fmt.Fprint(w, "ok")
	})
	addr, m := hardened(t, l, h)
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/block")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-entered
	resp, err := http.Get("http://" + addr + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || codeOf(errorOf(t, string(b))) != "server_overloaded" {
		t.Fatalf("over the limit: got %d Retry-After %q %s, want 503 server_overloaded with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get("http://" + addr + p)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s while full: %v %v", p, resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := counter(m.limitHits.WithLabelValues(LimitStreams)); got != 1 {
		t.Errorf("streams hits: got %v, want 1", got)
	}
}

func TestLimitsValidate(t *testing.T) {
	mod := func(f func(*Limits)) Limits { l := DefaultLimits(); f(&l); return l }
	tests := []struct {
		name string
		l    Limits
		want string
	}{
		{"defaults", DefaultLimits(), ""},
		{"small body", mod(func(l *Limits) { l.MaxBodyBytes = 10 }), "limits.max_body_bytes = 10"},
		{"small header", mod(func(l *Limits) { l.MaxHeaderBytes = 100 }), "limits.max_header_bytes = 100"},
		{"no header timeout", mod(func(l *Limits) { l.ReadHeaderTimeout = 0 }), "limits.read_header_timeout"},
		{"no body timeout", mod(func(l *Limits) { l.BodyTimeout = -1 }), "limits.body_timeout"},
		{"no idle timeout", mod(func(l *Limits) { l.IdleTimeout = 0 }), "limits.idle_timeout"},
		{"no streams", mod(func(l *Limits) { l.MaxConcurrentStreams = 0 }), "limits.max_concurrent_streams = 0"},
		{"budget under a body", mod(func(l *Limits) { l.MaxBufferedBytes = l.MaxBodyBytes - 1 }), "limits.max_buffered_bytes = 33554431"},
		{"negative tenant concurrency", mod(func(l *Limits) { l.TenantMaxConcurrent = -1 }), "limits.tenant_max_concurrent = -1"},
	}
	for _, tt := range tests {
		err := tt.l.Validate("limits")
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}
