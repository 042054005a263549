package servertest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
)

// TokenCompletion returns a completion body of model whose prompt is
// token ids, about size bytes long.
func TokenCompletion(model string, size int) string {
	var b strings.Builder
	b.WriteString(`{"model":"` + model + `","max_tokens":1,"prompt":[`)
	for i := 0; b.Len() < size-16; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(1 + i%9))
	}
	b.WriteString("]}")
	return b.String()
}

// HeldRequest is a POST whose headers and the first bytes of its body went
// to the server over a raw connection, the rest held back until Finish: a
// request the server has admitted and whose body it is still reading.
type HeldRequest struct {
	conn net.Conn
	rest string
}

// Hold sends a POST of body to addr's path with the given headers (and its
// Content-Length), all of the body but its last byte.
func Hold(t testing.TB, addr, path string, hdr map[string]string, body string) *HeldRequest {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, addr, len(body))
	for k, v := range hdr {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	head.WriteString("\r\n")
	if _, err := io.WriteString(conn, head.String()+body[:len(body)-1]); err != nil {
		t.Fatal(err)
	}
	return &HeldRequest{conn: conn, rest: body[len(body)-1:]}
}

// Finish sends the rest of the body and returns the response's status,
// headers and body.
func (h *HeldRequest) Finish(t testing.TB) (int, http.Header, string) {
	t.Helper()
	h.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(h.conn, h.rest); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(h.conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// Answer is one response of Flood.
type Answer struct {
	Status     int
	RetryAfter string
	Body       string
	Err        error
}

// Flood sends n copies of body to url at once, with the headers, and
// returns the answers in no particular order.
func Flood(url string, n int, hdr map[string]string, body string) []Answer {
	out := make([]Answer, n)
	var wg sync.WaitGroup
	cl := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, DisableKeepAlives: true}, Timeout: 60 * time.Second}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest("POST", url, strings.NewReader(body))
			if err != nil {
				out[i].Err = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := cl.Do(req)
			if err != nil {
				out[i].Err = err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out[i] = Answer{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Body: string(b)}
		}()
	}
	wg.Wait()
	return out
}

// CheckOverloaded fails t unless a is an overload refusal: 503 with a
// Retry-After and OpenAI's error body of type server_error, code
// server_overloaded.
func CheckOverloaded(t testing.TB, what string, a Answer) {
	t.Helper()
	if a.Err != nil {
		t.Fatalf("%s: %v", what, a.Err)
	}
	if a.Status != http.StatusServiceUnavailable || a.RetryAfter == "" {
		t.Fatalf("%s: got %d Retry-After %q %.200s, want 503 with Retry-After", what, a.Status, a.RetryAfter, a.Body)
	}
	if d := ErrorBody(t, a.Body); d.Type != openai.TypeServer || strings.Trim(string(d.Code), `"`) != "server_overloaded" {
		t.Fatalf("%s: got error %+v, want type server_error, code server_overloaded", what, d)
	}
}

// MetricValue returns the value of the sample named exactly name (labels
// included, as the text format writes them) in a Prometheus text page,
// and whether it was there.
func MetricValue(page, name string) (float64, bool) {
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
