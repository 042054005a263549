package epp

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
)

// Server is the external processor: it plays the picker's side of the
// Endpoint Picker Protocol for one Picker. It is safe for concurrent use;
// each gRPC stream is one HTTP request.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer

	cfg    Config
	picker Picker
	admit  Admitter
	log    *slog.Logger
	obs    Observer
}

// Observer is told how each stream's request was answered; the daemons
// count it in their metrics. It is called concurrently and must not block.
type Observer interface {
	// Picked reports a pick (took: from the last body byte to the answer).
	Picked(took time.Duration)
	// Refused reports an ImmediateResponse with status.
	Refused(status int)
}

// Option configures a Server.
type Option func(*Server)

// WithAdmitter makes the server admit every request through a (API keys,
// tenant limits), as proxy mode's guard does.
func WithAdmitter(a Admitter) Option { return func(s *Server) { s.admit = a } }

// WithLogger sets the server's logger.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithObserver sets the server's observer.
func WithObserver(o Observer) Option { return func(s *Server) { s.obs = o } }

// NewServer returns a server answering for p.
func NewServer(cfg Config, p Picker, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, picker: p, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Process serves one gateway stream (one HTTP request) until the gateway
// ends it. See doc.go for the messages and answers.
func (s *Server) Process(srv extprocv3.ExternalProcessor_ProcessServer) error {
	x := &stream{s: s, srv: srv, body: bodyBuffer{max: int(s.cfg.MaxBodyBytes)}, reqDuplex: true}
	defer x.close()
	for {
		msg, err := srv.Recv()
		if err != nil {
			if err == io.EOF || status.Code(err) == codes.Canceled || srv.Context().Err() != nil {
				return nil
			}
			return err
		}
		done, err := x.handle(msg)
		if err != nil {
			return status.Errorf(codes.Unknown, "epp: send: %v", err)
		}
		if done {
			return nil
		}
	}
}

// stream is the state of one Process call.
type stream struct {
	s   *Server
	srv extprocv3.ExternalProcessor_ProcessServer

	reqDuplex, respDuplex bool // body modes: echo chunks as streamed responses
	configured            bool // the first message's protocol config was read

	req      Request
	body     bodyBuffer
	picked   bool // the request headers were answered with a pick
	bodySeen bool // a request body message arrived
	ex       Exchange
	finished bool
	release  func()
}

// handle answers one message; done says the stream is over for the server
// (an ImmediateResponse was sent).
func (x *stream) handle(msg *extprocv3.ProcessingRequest) (done bool, err error) {
	if !x.configured {
		x.configured = true
		if pc := msg.GetProtocolConfig(); pc != nil {
			x.reqDuplex = pc.GetRequestBodyMode() == fullDuplex
			x.respDuplex = pc.GetResponseBodyMode() == fullDuplex
		} else {
			x.respDuplex = true
		}
	}
	switch m := msg.Request.(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		x.readHeaders(m.RequestHeaders, msg)
		if a := x.admitRequest(); a != nil {
			return true, x.refuse(a)
		}
		if m.RequestHeaders.GetEndOfStream() {
			return x.pick(false)
		}
		if !x.reqDuplex {
			// Only FULL_DUPLEX_STREAMED lets the picker hold the headers'
			// answer until the body arrived.
			x.s.log.Warn("epp: the gateway sends request bodies in a mode other than FULL_DUPLEX_STREAMED; refusing")
			return true, x.refuse(answerOf(ErrBodyMode))
		}
		return false, nil
	case *extprocv3.ProcessingRequest_RequestBody:
		if x.picked { // a body after the answer: pass it on
			return false, x.srv.Send(requestBodyResponse(m.RequestBody.GetBody(), m.RequestBody.GetEndOfStream(), x.reqDuplex))
		}
		x.bodySeen = true
		if err := x.body.add(m.RequestBody.GetBody()); err != nil {
			return true, x.refuse(answerOf(err))
		}
		if m.RequestBody.GetEndOfStream() {
			return x.pick(false)
		}
		return false, nil
	case *extprocv3.ProcessingRequest_RequestTrailers:
		if !x.picked {
			// The body ended with the trailers.
			if done, err := x.pick(true); done || err != nil {
				return done, err
			}
		}
		return false, x.srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{
			RequestTrailers: &extprocv3.TrailersResponse{}}})
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		h := x.served(m.ResponseHeaders, msg)
		if err := x.srv.Send(responseHeadersResponse(h)); err != nil {
			return false, err
		}
		if m.ResponseHeaders.GetEndOfStream() {
			x.finish(true)
		}
		return false, nil
	case *extprocv3.ProcessingRequest_ResponseBody:
		b := m.ResponseBody
		if x.ex != nil && !x.finished && len(b.GetBody()) > 0 {
			x.ex.Body(b.GetBody())
		}
		if b.GetEndOfStream() {
			x.finish(true)
		}
		return false, x.srv.Send(responseBodyResponse(b.GetBody(), b.GetEndOfStream(), x.respDuplex))
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		x.finish(true)
		return false, x.srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
			ResponseTrailers: &extprocv3.TrailersResponse{}}})
	}
	return false, nil
}

// admitRequest admits the request by its headers; it returns the answer
// of a refusal.
func (x *stream) admitRequest() *Error {
	if x.s.admit == nil {
		x.req.Principal = auth.Principal{Scopes: auth.ScopeAll}
		return nil
	}
	p, release, err := x.s.admit.AdmitHeader(x.req.Header)
	if err != nil {
		return Answer(func(w http.ResponseWriter) { edge.WriteHTTP(w, err) })
	}
	x.req.Principal, x.release = p, release
	return nil
}

// pick parses the body, asks the picker and sends its answer: the headers
// response with the destination, then the body (trailers: trailers
// follow, so the body does not end the stream).
func (x *stream) pick(trailers bool) (bool, error) {
	start := time.Now()
	x.picked = true
	body := x.body.bytes()
	x.req.Body = body
	if kind, ok := openai.KindOf(x.req.Path); ok && x.req.Method == http.MethodPost {
		oreq, err := openai.ParseRequest(kind, body)
		if err != nil {
			return true, x.refuse(answerOf(err))
		}
		x.req.Kind, x.req.OpenAI = kind, oreq
	}
	ctx := edge.WithPrincipal(x.srv.Context(), x.req.Principal)
	res, err := x.s.picker.Pick(ctx, &x.req)
	if err == nil && (res == nil || len(res.Endpoints) == 0) {
		err = ErrNoEndpoint
	}
	if err != nil {
		if res != nil && res.Exchange != nil {
			res.Exchange.Finish(false)
		}
		if ctx.Err() != nil {
			return true, nil // the gateway went away while the picker worked
		}
		x.s.log.Debug("epp: no pick", "path", x.req.Path, "err", err)
		return true, x.refuse(answerOf(err))
	}
	x.ex = res.Exchange
	if res.Body != nil {
		body = res.Body
	}
	if err := x.srv.Send(requestHeadersResponse(res, len(body))); err != nil {
		return false, err
	}
	if x.s.obs != nil {
		x.s.obs.Picked(time.Since(start))
	}
	if !x.bodySeen {
		return false, nil // a request without a body: nothing to pass on
	}
	cs := chunks(body, BodyChunkBytes)
	for i, c := range cs {
		if err := x.srv.Send(requestBodyResponse(c, i == len(cs)-1 && !trailers, true)); err != nil {
			return false, err
		}
	}
	return false, nil
}

// refuse sends an ImmediateResponse with a, ending the exchange.
func (x *stream) refuse(a *Error) error {
	x.finish(false)
	if x.s.obs != nil {
		x.s.obs.Refused(a.Status)
	}
	return x.srv.Send(immediateResponse(a))
}

// served reports the response headers to the exchange and returns the
// headers it adds.
func (x *stream) served(h *extprocv3.HttpHeaders, msg *extprocv3.ProcessingRequest) http.Header {
	if x.ex == nil || x.finished {
		return nil
	}
	st := 0
	for _, hv := range h.GetHeaders().GetHeaders() {
		if hv.GetKey() == ":status" {
			st = atoi(headerValue(hv))
		}
	}
	return x.ex.Served(servedEndpoint(msg), st)
}

// finish ends the exchange once.
func (x *stream) finish(complete bool) {
	if x.finished {
		return
	}
	x.finished = true
	if x.ex != nil {
		x.ex.Finish(complete)
	}
}

// close ends what the stream still holds when Process returns: an exchange
// without its end (the gateway went away) and the admission.
func (x *stream) close() {
	x.finish(false)
	if x.release != nil {
		x.release()
		x.release = nil
	}
}

func extprocv3Register(g *grpc.Server, s *Server) { extprocv3.RegisterExternalProcessorServer(g, s) }
