package global

import (
	"bytes"
	"net/http"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/api/openai"
)

// Complete serves the data plane over gRPC: the request runs through the
// same handler as the REST endpoint, whose response is streamed back as it
// is written. Cancelling the RPC cancels the request down both hops.
func (s *service) Complete(req *globalv1.CompleteRequest, stream grpc.ServerStreamingServer[globalv1.CompleteResponse]) (err error) {
	defer func() {
		// The handler aborts a response whose pod failed mid-stream (as the
		// HTTP server would drop the connection); end the RPC with an error.
		if r := recover(); r != nil {
			if r != http.ErrAbortHandler {
				panic(r)
			}
			err = status.Error(codes.Unavailable, "global: upstream failed mid-stream")
		}
	}()
	if s.g == nil {
		return status.Error(codes.Unavailable, "global: data plane not configured")
	}
	path, kind := "/v1/completions", openai.KindCompletion
	if req.GetChat() {
		path, kind = "/v1/chat/completions", openai.KindChat
	}
	hr, err := http.NewRequestWithContext(stream.Context(), http.MethodPost, path, bytes.NewReader(req.GetBody()))
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	hr.Header.Set("Content-Type", "application/json")
	w := &streamWriter{stream: stream, header: http.Header{}}
	s.g.serveInference(kind)(w, hr)
	if w.err != nil {
		return w.err
	}
	if !w.sent {
		w.WriteHeader(http.StatusOK)
		return w.flushHeader()
	}
	return nil
}

// streamWriter is an http.ResponseWriter (and Flusher) that sends what the
// handler writes as CompleteResponse messages.
type streamWriter struct {
	stream grpc.ServerStreamingServer[globalv1.CompleteResponse]
	header http.Header
	status int
	sent   bool
	err    error
	mu     sync.Mutex
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *streamWriter) flushHeader() error {
	if w.sent {
		return nil
	}
	w.sent = true
	h := make(map[string]string, len(w.header))
	for k := range w.header {
		h[k] = w.header.Get(k)
	}
	return w.stream.Send(&globalv1.CompleteResponse{Status: int32(w.status), Headers: h})
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.WriteHeader(http.StatusOK)
	if err := w.flushHeader(); err != nil {
		w.err = err
		return 0, err
	}
	if err := w.stream.Send(&globalv1.CompleteResponse{Data: bytes.Clone(p)}); err != nil {
		w.err = err
		return 0, err
	}
	return len(p), nil
}

// Flush implements http.Flusher: every Write is already sent.
func (w *streamWriter) Flush() {}
