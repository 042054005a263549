package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
)

// ServeHTTP serves s on l until s is shut down, which is not an error;
// other errors are prefixed with the daemon's name.
func ServeHTTP(name string, s *http.Server, l net.Listener) error {
	if err := s.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: http server: %w", name, err)
	}
	return nil
}

// ServeGRPC serves s on l until s is stopped, which is not an error; other
// errors are prefixed with the daemon's name.
func ServeGRPC(name string, s *grpc.Server, l net.Listener) error {
	if err := s.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("%s: grpc server: %w", name, err)
	}
	return nil
}

// Stop shuts both servers down gracefully, letting requests in flight
// finish, and closes what is still open when timeout has passed.
func Stop(h *http.Server, g *grpc.Server, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		h.Close()
	}
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		g.Stop()
	}
}
