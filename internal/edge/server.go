package edge

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// NewHTTPServer returns a server for h (already wrapped in Harden) with l's
// connection limits: ReadHeaderTimeout, IdleTimeout, and a hard bound on
// header bytes past which the server refuses without reading (twice
// MaxHeaderBytes; Harden answers the ones between). Serve it on
// WrapListener's listener: there the timeouts are counted and the
// server's own refusals (refusal.go) are answered in OpenAI's shape too.
// Its error log (TLS handshakes refused, for one) goes nowhere unless
// errLog is set.
func NewHTTPServer(h http.Handler, l Limits, errLog *log.Logger) *http.Server {
	if errLog == nil {
		errLog = log.New(io.Discard, "", 0)
	}
	return &http.Server{
		Handler:           markBusy(h),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    2 * l.MaxHeaderBytes,
		ConnState:         connState,
		ConnContext:       connContext,
		ErrorLog:          errLog,
	}
}

// connKey is the context key of a request's *conn.
type connKey struct{}

// connContext is NewHTTPServer's http.Server.ConnContext hook: it puts the
// connection in its requests' context for markBusy.
func connContext(ctx context.Context, nc net.Conn) context.Context {
	if c := connOf(nc); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// markBusy marks a request's connection busy while a handler has it: from
// then on what the server writes on it is the handler's answer.
func markBusy(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*conn); ok {
			c.busy.Store(true)
		}
		h.ServeHTTP(w, r)
	})
}

// GRPCServerOptions returns l's limits as gRPC server options: message
// size, header list size, the handshake's time, idle connections, HTTP/2
// streams per connection and calls per server (counted when hit).
func GRPCServerOptions(l Limits, m *Metrics) []grpc.ServerOption {
	var calls atomic.Int64
	enter := func() error {
		if calls.Add(1) > int64(l.MaxConcurrentStreams) {
			calls.Add(-1)
			m.Hit(LimitStreams)
			return GRPCError(ErrOverloaded)
		}
		return nil
	}
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(l.MaxBodyBytes, 1<<31-1))),
		grpc.MaxHeaderListSize(uint32(l.MaxHeaderBytes)),
		grpc.ConnectionTimeout(l.ReadHeaderTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.IdleTimeout}),
		grpc.MaxConcurrentStreams(uint32(l.MaxConcurrentStreams)),
		grpc.StatsHandler(sizeStats{m}),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := enter(); err != nil {
				return nil, err
			}
			defer calls.Add(-1)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := enter(); err != nil {
				return err
			}
			defer calls.Add(-1)
			return h(srv, ss)
		}),
	}
}

// sizeStats counts the calls gRPC refused for a message over
// MaxRecvMsgSize: gRPC ends them before any interceptor runs, and says so
// only in the status of the call's end.
type sizeStats struct{ m *Metrics }

func (sizeStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (sizeStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (sizeStats) HandleConn(context.Context, stats.ConnStats)                       {}

func (s sizeStats) HandleRPC(_ context.Context, st stats.RPCStats) {
	end, ok := st.(*stats.End)
	if !ok || end.Error == nil {
		return
	}
	if e, ok := status.FromError(end.Error); ok && e.Code() == codes.ResourceExhausted &&
		strings.Contains(e.Message(), "larger than max") {
		s.m.Hit(LimitBodySize)
	}
}
