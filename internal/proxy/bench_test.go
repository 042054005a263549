package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchBody is a small completions request.
const benchBody = `{"model":"m","prompt":"Hello, my name is","max_tokens":8}`

// benchStream is a 16-event stream like vLLM's.
var benchStream = func() string {
	var b strings.Builder
	for range 16 {
		b.WriteString(sseEvent(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}]}`))
	}
	b.WriteString(sseEvent(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":21,"completion_tokens":16}}`))
	b.WriteString(sseEvent("[DONE]"))
	return b.String()
}()

// benchPod answers a JSON completion, or streams benchStream with a flush per
// event when stream is true.
func benchPod(b *testing.B, stream bool) *httptest.Server {
	events := strings.SplitAfter(benchStream, "\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, completionJSON)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for _, e := range events {
			if e != "" {
				io.WriteString(w, e)
				rc.Flush()
			}
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// benchClient is a keep-alive client like a load generator's.
func benchClient(b *testing.B) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// runRequests sends b.N requests to url and reports latency percentiles.
func runRequests(b *testing.B, c *http.Client, url string, wantLen int) {
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(benchBody)))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if int(n) != wantLen {
			b.Fatalf("got %d bytes, want %d", n, wantLen)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
}

// proxyFront starts a router-side server that forwards to pod.
func proxyFront(b *testing.B, pod *httptest.Server) string {
	p := testProxy(b, Config{})
	tgt := Target{Pod: "a", Address: pod.Listener.Addr().String()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := p.Forward(w, r, body, []Target{tgt}, Hooks{}); err != nil {
			b.Error(err)
		}
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkDirect is the baseline: a client calling the pod itself.
func BenchmarkDirect(b *testing.B) {
	pod := benchPod(b, false)
	runRequests(b, benchClient(b), pod.URL+"/v1/completions", len(completionJSON))
}

// BenchmarkForward is the same call through a Forward hop; the difference
// to BenchmarkDirect is the proxy's overhead (one more HTTP server and
// client hop included).
func BenchmarkForward(b *testing.B) {
	pod := benchPod(b, false)
	runRequests(b, benchClient(b), proxyFront(b, pod)+"/v1/completions", len(completionJSON))
}

// BenchmarkDirectStream is the streaming baseline.
func BenchmarkDirectStream(b *testing.B) {
	pod := benchPod(b, true)
	runRequests(b, benchClient(b), pod.URL+"/v1/completions", len(benchStream))
}

// BenchmarkForwardStream streams 18 flushed events through Forward.
func BenchmarkForwardStream(b *testing.B) {
	pod := benchPod(b, true)
	runRequests(b, benchClient(b), proxyFront(b, pod)+"/v1/completions", len(benchStream))
}

// BenchmarkUsageScanner scans a 16-event stream for usage.
func BenchmarkUsageScanner(b *testing.B) {
	data := []byte(benchStream)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var s usageScanner
		s.Write(data)
		if s.usage() == nil {
			b.Fatal("no usage")
		}
	}
}
