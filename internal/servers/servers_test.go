package servers

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestStopEndsServing checks that the Serve functions report a stop as no
// error, and that Stop returns by its deadline even when a request never
// finishes.
func TestStopEndsServing(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	entered := make(chan struct{})
	h := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-block // a request that outlives the deadline
	})}
	g := grpc.NewServer()
	hl, gl := listen(t), listen(t)
	errs := make(chan error, 2)
	go func() { errs <- ServeHTTP("test", h, hl) }()
	go func() { errs <- ServeGRPC("test", g, gl) }()
	go http.Get("http://" + hl.Addr().String())
	<-entered

	start := time.Now()
	Stop(h, g, 200*time.Millisecond)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Stop took %v with a 200ms deadline", took)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("serve after Stop: %v", err)
		}
	}
}

// TestServeErrorsNameTheDaemon checks that a real serving failure is an
// error that names the daemon and the server.
func TestServeErrorsNameTheDaemon(t *testing.T) {
	l := listen(t)
	l.Close()
	err := ServeHTTP("celld", &http.Server{}, l)
	if err == nil || !strings.Contains(err.Error(), "celld: http server") || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ServeHTTP on a closed listener = %v", err)
	}
	l = listen(t)
	l.Close()
	if err := ServeGRPC("globald", grpc.NewServer(), l); err == nil || !strings.Contains(err.Error(), "globald: grpc server") {
		t.Fatalf("ServeGRPC on a closed listener = %v", err)
	}
}
