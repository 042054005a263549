package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// waitTimeout is the generous deadline of every wait in these tests.
const waitTimeout = 20 * time.Second

// recorded is one request a fake pod received.
type recorded struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// fakePod is an httptest server on 127.0.0.1 that records the requests it
// receives and answers them with its handler.
type fakePod struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

// newFakePod starts a fake pod answering with handle (which gets the body
// already read).
func newFakePod(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *fakePod {
	t.Helper()
	fp := &fakePod{}
	fp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fp.mu.Lock()
		fp.reqs = append(fp.reqs, recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		fp.mu.Unlock()
		handle(w, r, body)
	}))
	t.Cleanup(fp.Close)
	return fp
}

// requests returns a copy of the recorded requests.
func (fp *fakePod) requests() []recorded {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return append([]recorded(nil), fp.reqs...)
}

// target returns the pod as a Target.
func (fp *fakePod) target(name string) Target {
	return Target{Pod: name, Address: fp.Listener.Addr().String()}
}

// refusedTarget returns a target whose address refuses connections.
func refusedTarget(t testing.TB) Target {
	return Target{Pod: "refused", Address: servertest.RefusedAddr(t)}
}

// hijackClose takes over the connection and closes it: the client sees the
// connection break.
func hijackClose(t testing.TB, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

// callLog records the hooks' calls.
type callLog struct {
	mu     sync.Mutex
	events []string
	done   []Result
	pre    []Result
	doneAt []Target
}

func (c *callLog) add(s string) {
	c.mu.Lock()
	c.events = append(c.events, s)
	c.mu.Unlock()
}

// hooks returns Hooks that record into c.
func (c *callLog) hooks() Hooks {
	return Hooks{
		OnAttempt:   func(t Target, n int) { c.add("attempt " + t.Pod) },
		OnRetry:     func(t Target, n int, err error) { c.add("retry " + t.Pod) },
		OnFirstByte: func(t Target) { c.add("first " + t.Pod) },
		OnPrefillDone: func(t Target, res Result) {
			c.add("prefill-done " + t.Pod)
			c.mu.Lock()
			c.pre = append(c.pre, res)
			c.mu.Unlock()
		},
		OnDone: func(t Target, res Result) {
			c.add("done " + t.Pod)
			c.mu.Lock()
			c.done = append(c.done, res)
			c.doneAt = append(c.doneAt, t)
			c.mu.Unlock()
		},
	}
}

func (c *callLog) snapshot() ([]string, []Result, []Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.events...), append([]Result(nil), c.done...), append([]Result(nil), c.pre...)
}

// front is the router side of a test: an httptest server whose handler
// calls Forward (or ForwardDisaggregated) with fixed targets and reports the
// call's error on errs.
type front struct {
	*httptest.Server
	errs chan error
}

// newFront starts a front that serves every request with call.
func newFront(t testing.TB, call func(w http.ResponseWriter, r *http.Request, body []byte) error) *front {
	t.Helper()
	f := &front{errs: make(chan error, 16)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("front: read body: %v", err)
			return
		}
		err = call(w, r, body)
		f.errs <- err
		if errors.Is(err, ErrMidStream) {
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// nextErr waits for the error of the next call.
func (f *front) nextErr(t testing.TB) error {
	t.Helper()
	select {
	case err := <-f.errs:
		return err
	case <-time.After(waitTimeout):
		t.Fatal("front: no call ended in time")
		return nil
	}
}

// waitChan waits for a signal on ch.
func waitChan(t testing.TB, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// testProxy returns a proxy with cfg (DefaultConfig when zero) closed at
// cleanup.
func testProxy(t testing.TB, cfg Config) *Proxy {
	t.Helper()
	if reflect.ValueOf(cfg).IsZero() {
		cfg = DefaultConfig()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// post sends body to url with ctx.
func post(ctx context.Context, url, body string, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}
