package edge

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// budgetModel is the naive reference of Budget: a plain sum under a lock.
type budgetModel struct {
	max, used int64
}

func (m *budgetModel) tryAcquire(n int64) bool {
	if n <= 0 {
		return true
	}
	if m.used+n > m.max {
		return false
	}
	m.used += n
	return true
}

// runBudgetOps drives a Budget and the model with the same operations,
// decoded from ops (each 3 bytes: kind, size), and fails at the first
// difference or broken invariant.
func runBudgetOps(t *testing.T, max int64, ops []byte) {
	b, m := NewBudget(max), &budgetModel{max: max}
	var held []int64 // reservations the budget granted, in order
	for len(ops) >= 3 {
		kind, n := ops[0], int64(binary.BigEndian.Uint16(ops[1:3]))
		ops = ops[3:]
		if kind%3 == 0 && len(held) > 0 {
			i := int(n) % len(held)
			r := held[i]
			held = append(held[:i], held[i+1:]...)
			b.Release(r)
			m.used -= r
		} else {
			got, want := b.TryAcquire(n), m.tryAcquire(n)
			if got != want {
				t.Fatalf("TryAcquire(%d) with %d of %d used: got %v, want %v", n, m.used, max, got, want)
			}
			if got && n > 0 {
				held = append(held, n)
			}
		}
		if b.Used() != m.used || b.Used() < 0 || b.Used() > max {
			t.Fatalf("used: got %d, want %d (of %d)", b.Used(), m.used, max)
		}
	}
	for _, r := range held {
		b.Release(r)
	}
	if b.Used() != 0 {
		t.Fatalf("after releasing everything: used %d, want 0", b.Used())
	}
}

// TestBudgetMatchesModel checks Budget against the naive model on random
// operation sequences.
func TestBudgetMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 2))
	for range 200 {
		ops := make([]byte, 3*rng.IntN(400))
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		runBudgetOps(t, 1+rng.Int64N(200_000), ops)
	}
}

// FuzzBudget checks Budget against the naive model on any operation
// sequence.
func FuzzBudget(f *testing.F) {
	f.Add(int64(1000), []byte{1, 0, 100, 0, 0, 0, 1, 3, 232, 1, 3, 233})
	f.Add(int64(1), []byte{1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 1})
	f.Add(int64(65535), []byte{2, 255, 255, 2, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, max int64, ops []byte) {
		if max <= 0 || max > 1<<40 {
			return
		}
		runBudgetOps(t, max, ops)
	})
}

// TestBudgetConcurrent has goroutines acquire and release at once: the
// budget never goes over its size or below zero, and ends at zero.
func TestBudgetConcurrent(t *testing.T) {
	const max = 10_000
	b := NewBudget(max)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 5000 {
				n := 1 + rng.Int64N(3000)
				if b.TryAcquire(n) {
					if u := b.Used(); u > max || u < n {
						t.Errorf("used %d with %d held, budget %d", u, n, max)
					}
					b.Release(n)
				}
			}
		}()
	}
	wg.Wait()
	if b.Used() != 0 {
		t.Fatalf("used at the end: got %d, want 0", b.Used())
	}
}

// TestNilBudgetIsUnlimited checks that a budget of 0 bytes is no budget.
func TestNilBudgetIsUnlimited(t *testing.T) {
	b := NewBudget(0)
	if b != nil || !b.TryAcquire(1<<62) || b.Used() != 0 || b.Max() != 0 {
		t.Fatalf("NewBudget(0): got %v, want an unlimited nil budget", b)
	}
	b.Release(1 << 62)
}

// TestRequireBudget checks the guard's reservation of data-plane bodies:
// a body that does not fit beside those in flight is refused with 503,
// Retry-After and OpenAI's error shape before the handler runs (announced
// length) or while it reads (chunked); a body of the control plane is not
// counted; everything is released when the handlers return.
func TestRequireBudget(t *testing.T) {
	b := NewBudget(10_000)
	g, m, _ := newTestGuard(t, GuardConfig{Budget: b})
	entered, release := make(chan struct{}), make(chan struct{})
	h := g.Require(auth.ScopeInference, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			openaiRefusal(w, err)
			return
		}
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-release
		}
		w.Write(body[:1])
	}))
	send := func(path string, body io.Reader, size int64) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, body)
		req.ContentLength = size
		req.Header.Set("Authorization", "Bearer lab-key")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- send("/block", strings.NewReader(strings.Repeat("a", 6000)), 6000) }()
	<-entered
	if b.Used() != 6000 || counter(m.buffered) != 6000 {
		t.Fatalf("one body of 6000 in flight: used %d, gauge %v, want 6000", b.Used(), counter(m.buffered))
	}
	refused := func(what string, rec *httptest.ResponseRecorder) {
		t.Helper()
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" {
			t.Fatalf("%s: got %d Retry-After %q %s, want 503 with Retry-After 1", what, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
		if d := errorOf(t, rec.Body.String()); codeOf(d) != "server_overloaded" || d.Type != "server_error" {
			t.Fatalf("%s: got error %+v, want server_overloaded of type server_error", what, d)
		}
	}
	refused("announced", send("/x", strings.NewReader(strings.Repeat("a", 5000)), 5000))
	refused("chunked", send("/x", io.MultiReader(strings.NewReader(strings.Repeat("a", 5000))), -1))
	if got := counter(m.limitHits.WithLabelValues(LimitBufferBudget)); got != 2 {
		t.Errorf("buffer_budget hits: got %v, want 2", got)
	}
	// What fits beside it passes.
	if rec := send("/x", strings.NewReader(strings.Repeat("b", 4000)), 4000); rec.Code != 200 {
		t.Fatalf("a body that fits: got %d %s", rec.Code, rec.Body)
	}
	close(release)
	if rec := <-done; rec.Code != 200 {
		t.Fatalf("the held request: got %d", rec.Code)
	}
	if b.Used() != 0 || counter(m.buffered) != 0 {
		t.Fatalf("after the requests: used %d, gauge %v, want 0", b.Used(), counter(m.buffered))
	}
	// Now a chunked body of many grains passes while it fits...
	big := NewBudget(4 * budgetGrain)
	g2, _, _ := newTestGuard(t, GuardConfig{Budget: big})
	var got int
	h2 := g2.Require(auth.ScopeInference, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		got = len(body)
		if big.Used() < int64(len(body)) || big.Used() > 4*budgetGrain {
			t.Errorf("chunked body of %d: %d reserved", len(body), big.Used())
		}
	}))
	req := httptest.NewRequest("POST", "/x", io.MultiReader(bytes.NewReader(make([]byte, 3*budgetGrain+5))))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer lab-key")
	rec := httptest.NewRecorder()
	h2.ServeHTTP(rec, req)
	if rec.Code != 200 || got != 3*budgetGrain+5 || big.Used() != 0 {
		t.Fatalf("chunked body of 3 grains and 5 bytes: got %d, read %d, %d left reserved", rec.Code, got, big.Used())
	}
	// ...and is refused once it outgrows the budget, the handler's own
	// answer dropped.
	req = httptest.NewRequest("POST", "/x", io.MultiReader(bytes.NewReader(make([]byte, 5*budgetGrain))))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer lab-key")
	rec = httptest.NewRecorder()
	h2.ServeHTTP(rec, req)
	refused("chunked past the budget", rec)
	if big.Used() != 0 {
		t.Fatalf("after a refused chunked body: %d left reserved", big.Used())
	}
	// The control plane reserves nothing.
	adm := g.Require(auth.ScopeAdmin, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.Used() != 0 {
			t.Errorf("control plane: %d reserved", b.Used())
		}
	}))
	req = httptest.NewRequest("POST", "/x", strings.NewReader(strings.Repeat("a", 20_000)))
	req.Header.Set("Authorization", "Bearer lab-key")
	rec = httptest.NewRecorder()
	adm.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("control plane with a body over the budget: got %d", rec.Code)
	}
}

// openaiRefusal answers a failed body read as a handler does.
func openaiRefusal(w http.ResponseWriter, err error) {
	http.Error(w, err.Error(), http.StatusBadRequest)
}

// TestTenantDefaultConcurrency checks that a tenant without max_concurrent
// in the key file gets the guard's default, and one with 0 is unlimited.
func TestTenantDefaultConcurrency(t *testing.T) {
	tab, err := auth.ParseKeyFile([]byte("tenants:\n  - {name: dflt}\n  - {name: free, max_concurrent: 0}\nkeys:\n" +
		"  - {sha256: " + auth.HashKey("d-key").String() + ", tenant: dflt, scopes: [inference]}\n" +
		"  - {sha256: " + auth.HashKey("f-key").String() + ", tenant: free, scopes: [inference]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(GuardConfig{TenantMaxConcurrent: 2}, nil)
	g.SetKeys(tab)
	var wg sync.WaitGroup
	entered, release := make(chan struct{}, 8), make(chan struct{})
	h := g.Require(auth.ScopeInference, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-release
		}
	}))
	send := func(key, path string) int {
		req := httptest.NewRequest("POST", path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, key := range []string{"d-key", "d-key", "f-key", "f-key", "f-key"} {
		wg.Add(1)
		go func() { defer wg.Done(); send(key, "/block") }()
		<-entered
	}
	if got := send("d-key", "/x"); got != 429 {
		t.Errorf("third request of a tenant with the default of 2: got %d, want 429", got)
	}
	if got := send("f-key", "/x"); got != 200 {
		t.Errorf("fourth request of a tenant with max_concurrent 0: got %d, want 200", got)
	}
	close(release)
	wg.Wait()
}

// BenchmarkBudget is the cost of reserving and releasing a body's bytes.
func BenchmarkBudget(b *testing.B) {
	bud := NewBudget(1 << 40)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if bud.TryAcquire(4096) {
				bud.Release(4096)
			}
		}
	})
}

// TestBudgetTrimsAfterAFlood checks when the budget returns memory: once
// the bytes reserved fall to an eighth of it after reaching half, not for
// traffic that never came near half, and Trim stops with its context.
func TestBudgetTrimsAfterAFlood(t *testing.T) {
	b := NewBudget(1000)
	var trims atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Trim(ctx, func() { trims.Add(1) }) }()
	for range 100 { // steady traffic well under half
		if !b.TryAcquire(300) {
			t.Fatal("300 of 1000 refused")
		}
		b.Release(300)
	}
	if len(b.trim) != 0 || trims.Load() != 0 {
		t.Fatalf("steady traffic signalled a trim")
	}
	b.TryAcquire(400)
	b.TryAcquire(200) // 600 reserved: a flood
	b.Release(400)    // 200 left: still above an eighth
	if len(b.trim) != 0 || trims.Load() != 0 {
		t.Fatalf("a trim while 200 of 1000 are reserved")
	}
	b.Release(200)
	deadline := time.Now().Add(20 * time.Second)
	for trims.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no trim after the flood drained")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if trims.Load() != 1 {
		t.Fatalf("trims: got %d, want 1", trims.Load())
	}
	var nilBudget *Budget
	nilBudget.Trim(context.Background(), nil) // returns at once
}
