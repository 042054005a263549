package servertest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// SilentAddr returns the address of a listener on 127.0.0.1 that accepts
// connections and never reads or answers, as a stopped (SIGSTOPped)
// process's socket does: the kernel completes the handshake and the
// request sits in the buffer. The connections are closed at cleanup.
func SilentAddr(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return lis.Addr().String()
}

// Freezable is an HTTP server on 127.0.0.1 that can be frozen: while it is,
// every request (its liveness path included) waits without an answer, and
// a handler that calls Gate mid-response stops there, as in a stopped
// process. Thaw lets them all go on.
type Freezable struct {
	*httptest.Server
	mu     sync.Mutex
	frozen bool
	thaw   chan struct{}
}

// NewFreezable starts a server answering with h while not frozen; Close
// (at cleanup) thaws it first.
func NewFreezable(t testing.TB, h http.Handler) *Freezable {
	t.Helper()
	f := &Freezable{thaw: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !f.Gate(r) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		f.Thaw()
		f.Server.CloseClientConnections()
		f.Server.Close()
	})
	return f
}

// Freeze makes every request and Gate wait until Thaw.
func (f *Freezable) Freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.frozen {
		f.frozen = true
		f.thaw = make(chan struct{})
	}
}

// Thaw ends a freeze.
func (f *Freezable) Thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen {
		f.frozen = false
		close(f.thaw)
	}
}

// Gate waits while the server is frozen; it reports false when r ended
// first.
func (f *Freezable) Gate(r *http.Request) bool {
	f.mu.Lock()
	frozen, thaw := f.frozen, f.thaw
	f.mu.Unlock()
	if !frozen {
		return true
	}
	select {
	case <-thaw:
		return true
	case <-r.Context().Done():
		return false
	}
}

// Addr returns the server's host:port.
func (f *Freezable) Addr() string { return f.Listener.Addr().String() }
