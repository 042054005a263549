package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
)

const completionJSON = `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" world","finish_reason":"length"}],"usage":{"prompt_tokens":12,"total_tokens":14,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":8}}}`

func TestForwardRelaysNonStream(t *testing.T) {
	pod := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "a")
		w.Header().Set("Connection", "X-Secret")
		w.Header().Set("X-Secret", "hop")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, completionJSON)
	})
	p := testProxy(t, Config{})
	var log callLog
	tgt := pod.target("a")
	tgt.Header = http.Header{"X-Cache-Hint": {"pod=a;blocks=8"}}
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{tgt}, log.hooks())
	})

	body := `{"model":"m","prompt":"hello","max_tokens":2}`
	resp, err := post(context.Background(), f.URL+"/v1/completions?x=1", body, map[string]string{
		"Traceparent":         "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"Tracestate":          "vendor=1",
		"Authorization":       "Bearer k",
		"Connection":          "X-Client-Hop",
		"X-Client-Hop":        "drop me",
		"X-Cache-Hint":        "client value, replaced",
		"Proxy-Authorization": "drop me too",
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := f.nextErr(t); err != nil {
		t.Fatalf("Forward: got error %v, want nil", err)
	}
	if resp.StatusCode != http.StatusCreated || string(got) != completionJSON {
		t.Errorf("client got %d %s, want 201 %s", resp.StatusCode, got, completionJSON)
	}
	if resp.Header.Get("X-Request-Id") != "a" || resp.Header.Get("X-Secret") != "" {
		t.Errorf("client headers: got X-Request-Id %q X-Secret %q, want a and none", resp.Header.Get("X-Request-Id"), resp.Header.Get("X-Secret"))
	}

	reqs := pod.requests()
	if len(reqs) != 1 {
		t.Fatalf("pod got %d requests, want 1", len(reqs))
	}
	rq := reqs[0]
	if rq.Method != http.MethodPost || rq.Path != "/v1/completions" || rq.Query != "x=1" || string(rq.Body) != body {
		t.Errorf("pod got %s %s?%s %s, want POST /v1/completions?x=1 %s", rq.Method, rq.Path, rq.Query, rq.Body, body)
	}
	wantHdr := map[string]string{
		"Traceparent":         "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"Tracestate":          "vendor=1",
		"Authorization":       "Bearer k",
		"X-Cache-Hint":        "pod=a;blocks=8",
		"X-Client-Hop":        "",
		"Proxy-Authorization": "",
	}
	for k, want := range wantHdr {
		if g := rq.Header.Get(k); g != want {
			t.Errorf("pod header %s: got %q, want %q", k, g, want)
		}
	}

	events, done, _ := log.snapshot()
	if want := []string{"attempt a", "first a", "done a"}; !reflect.DeepEqual(events, want) {
		t.Errorf("hooks: got %v, want %v", events, want)
	}
	wantUsage := &Usage{PromptTokens: 12, CompletionTokens: 2, CachedTokens: 8}
	if len(done) != 1 || done[0].Status != 201 || done[0].Bytes != int64(len(completionJSON)) || !reflect.DeepEqual(done[0].Usage, wantUsage) || done[0].Err != nil {
		t.Errorf("OnDone: got %+v, want status 201, %d bytes, usage %+v", done, len(completionJSON), wantUsage)
	}
}

func TestForwardRelaysClientErrorWithoutRetry(t *testing.T) {
	const errBody = `{"error":{"message":"prompt too long","type":"BadRequestError","param":null,"code":400}}`
	bad := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, errBody)
	})
	spare := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {})
	p := testProxy(t, Config{})
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{bad.target("bad"), spare.target("spare")}, Hooks{})
	})
	resp, err := post(context.Background(), f.URL+"/v1/completions", `{"prompt":"x"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := f.nextErr(t); err != nil {
		t.Errorf("Forward: got %v, want nil (a 4xx relayed whole)", err)
	}
	if resp.StatusCode != 400 || string(got) != errBody {
		t.Errorf("client got %d %s, want 400 %s", resp.StatusCode, got, errBody)
	}
	if n := len(spare.requests()); n != 0 {
		t.Errorf("spare pod got %d requests, want 0", n)
	}
}

func TestForwardRetriesBeforeFirstByte(t *testing.T) {
	good := func(t *testing.T) *fakePod {
		return newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, completionJSON)
		})
	}
	tests := []struct {
		name  string
		first func(t *testing.T) Target
	}{
		{"connection refused", func(t *testing.T) Target { return refusedTarget(t) }},
		{"503", func(t *testing.T) Target {
			return newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				openai.WriteError(w, http.StatusServiceUnavailable, openai.TypeServer, "overloaded")
			}).target("bad")
		}},
		{"connection closed before headers", func(t *testing.T) Target {
			return newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) { hijackClose(t, w) }).target("bad")
		}},
		{"headers, then closed before the first body byte", func(t *testing.T) Target {
			return newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				http.NewResponseController(w).Flush()
				hijackClose(t, w)
			}).target("bad")
		}},
		{"header timeout", func(t *testing.T) Target {
			return newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				<-r.Context().Done() // hangs until the proxy gives up
			}).target("bad")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ResponseHeaderTimeout = 300 * time.Millisecond
			p := testProxy(t, cfg)
			g := good(t)
			first := tt.first(t)
			var log callLog
			f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
				return p.Forward(w, r, body, []Target{first, g.target("good")}, log.hooks())
			})
			resp, err := post(context.Background(), f.URL+"/v1/completions", `{"prompt":"x"}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err := f.nextErr(t); err != nil {
				t.Errorf("Forward: got %v, want nil", err)
			}
			if resp.StatusCode != 200 || string(got) != completionJSON {
				t.Errorf("client got %d %s, want 200 from the good pod", resp.StatusCode, got)
			}
			events, done, _ := log.snapshot()
			want := []string{"attempt " + first.Pod, "retry " + first.Pod, "attempt good", "first good", "done good"}
			if !reflect.DeepEqual(events, want) {
				t.Errorf("hooks: got %v, want %v", events, want)
			}
			if len(done) != 1 || done[0].Attempts != 2 {
				t.Errorf("OnDone: got %+v, want one result with 2 attempts", done)
			}
		})
	}
}

func TestForwardFailures(t *testing.T) {
	hang := func(t *testing.T) Target {
		return newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) { <-r.Context().Done() }).target("hang")
	}
	unavailable := func(t *testing.T) Target {
		return newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
			openai.WriteError(w, http.StatusServiceUnavailable, openai.TypeServer, "pod overloaded")
		}).target("busy")
	}
	tests := []struct {
		name       string
		targets    func(t *testing.T) []Target
		cfg        func(c *Config)
		wantStatus int
		wantErr    error
		wantCode   string // OpenAI error code; "" for a relayed pod body
		wantMsg    string
	}{
		{"no targets", func(t *testing.T) []Target { return nil }, nil, 503, ErrNoTarget, `"no_pod_available"`, "no upstream server is available"},
		{"all refused", func(t *testing.T) []Target { return []Target{refusedTarget(t), refusedTarget(t)} }, nil, 502, ErrUpstream, `"upstream_failure"`, "failed to answer"},
		{"header timeouts", func(t *testing.T) []Target { return []Target{hang(t), hang(t)} },
			func(c *Config) { c.ResponseHeaderTimeout = 200 * time.Millisecond }, 504, ErrTimeout, `"upstream_timeout"`, "timed out"},
		{"request timeout", func(t *testing.T) []Target { return []Target{hang(t)} },
			func(c *Config) { c.RequestTimeout = 300 * time.Millisecond }, 504, ErrTimeout, `"upstream_timeout"`, "timed out"},
		{"last 503 relayed", func(t *testing.T) []Target { return []Target{refusedTarget(t), unavailable(t)} }, nil, 503, nil, "null", "pod overloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			p := testProxy(t, cfg)
			targets := tt.targets(t)
			f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
				return p.Forward(w, r, body, targets, Hooks{})
			})
			resp, err := post(context.Background(), f.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ferr := f.nextErr(t)
			if !errors.Is(ferr, tt.wantErr) || (tt.wantErr == nil) != (ferr == nil) {
				t.Errorf("Forward: got %v, want %v", ferr, tt.wantErr)
			}
			if ferr != nil && StatusOf(ferr) != tt.wantStatus {
				t.Errorf("StatusOf: got %d, want %d", StatusOf(ferr), tt.wantStatus)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("client status: got %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			var eb openai.ErrorBody
			if err := json.Unmarshal(data, &eb); err != nil {
				t.Fatalf("client body %s is not an OpenAI error: %v", data, err)
			}
			if string(eb.Error.Code) != tt.wantCode || !strings.Contains(eb.Error.Message, tt.wantMsg) || eb.Error.Type != openai.TypeServer {
				t.Errorf("client body: got %s, want code %s, type server_error, message containing %q", data, tt.wantCode, tt.wantMsg)
			}
			// The client never sees the pods' addresses nor the dial
			// errors; the returned error (for the logs) names them.
			for _, tg := range targets {
				if strings.Contains(string(data), tg.Address) || strings.Contains(string(data), tg.Pod) {
					t.Errorf("client body %s names target %s (%s)", data, tg.Pod, tg.Address)
				}
				if tt.wantErr != nil && !strings.Contains(ferr.Error(), tg.Pod) {
					t.Errorf("Forward error %q does not name target %s for the logs", ferr, tg.Pod)
				}
			}
			for _, internal := range []string{"dial tcp", "connection refused", "proxy:"} {
				if strings.Contains(string(data), internal) {
					t.Errorf("client body %s contains %q", data, internal)
				}
			}
		})
	}
}

func TestForwardMaxAttempts(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxAttempts = 2
	p := testProxy(t, cfg)
	third := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {})
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{refusedTarget(t), refusedTarget(t), third.target("third")}, Hooks{})
	})
	resp, err := post(context.Background(), f.URL+"/v1/completions", `{"prompt":"x"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := f.nextErr(t); !errors.Is(err, ErrUpstream) {
		t.Errorf("Forward: got %v, want ErrUpstream", err)
	}
	if n := len(third.requests()); n != 0 {
		t.Errorf("third target got %d requests, want 0 with MaxAttempts 2", n)
	}
}

// TestOnStatus checks that OnStatus tells the status of the relayed answer,
// a success or an error, before OnResponse.
func TestOnStatus(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusBadRequest} {
		pod := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, `{"error":{"message":"x","type":"BadRequestError","param":null,"code":400}}`)
		})
		var calls []string
		p := testProxy(t, Config{})
		f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
			return p.Forward(w, r, body, []Target{pod.target("a")}, Hooks{
				OnStatus:   func(t Target, s int) { calls = append(calls, fmt.Sprintf("status %s %d", t.Pod, s)) },
				OnResponse: func(Target, http.Header) { calls = append(calls, "response") },
			})
		})
		resp, err := post(context.Background(), f.URL+"/v1/completions", `{"prompt":"x"}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		f.nextErr(t)
		if want := []string{fmt.Sprintf("status a %d", status), "response"}; !slices.Equal(calls, want) {
			t.Errorf("status %d: hooks got %v, want %v", status, calls, want)
		}
	}
}
