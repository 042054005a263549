package epptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// Call is one HTTP request the gateway routes through the picker.
type Call struct {
	// Method and Path are the request line (POST /v1/chat/completions).
	Method, Path string
	// Header holds the client's headers.
	Header http.Header
	// Body is the request body, sent in Frames frames (at least 1; cut at
	// Cuts when set: ascending offsets inside the body).
	Body   []byte
	Frames int
	Cuts   []int
	// Subset, when not nil, is sent as the subset hint (a list of strings,
	// or one comma-separated string with SubsetString).
	Subset       []string
	SubsetString bool
	// Trailers sends request trailers after the body (which then does not
	// end the stream itself).
	Trailers bool
	// ResponseTrailers ends the response with trailers (the last body
	// frame then does not end the stream).
	ResponseTrailers bool
	// NoUpstream stops after the picker's answer to the request.
	NoUpstream bool
	// CancelAfter cancels the stream after this many response body
	// frames were sent to the picker (0: never).
	CancelAfter int
	// ServedOverride, when set, is reported as the served endpoint instead
	// of the one that answered.
	ServedOverride string
	// Timeout bounds the whole call (default 30s).
	Timeout time.Duration
}

// Outcome is what the gateway saw and did.
type Outcome struct {
	// Immediate is the picker's ImmediateResponse, nil when it routed.
	Immediate *extprocv3.ImmediateResponse
	// Destination is the x-gateway-destination-endpoint header the picker
	// set; MetadataDestination the envoy.lb value of the same name.
	Destination, MetadataDestination string
	// ClearRouteCache says the picker asked the gateway to route again.
	ClearRouteCache bool
	// SetHeaders and RemoveHeaders are the request header changes
	// (destination included).
	SetHeaders    map[string]string
	RemoveHeaders []string
	// Forwarded is the body the gateway forwards; ForwardedEnd says the
	// picker's last body frame ended the stream.
	Forwarded    []byte
	ForwardedEnd bool
	// RequestBodyFrames counts the picker's request body answers.
	RequestBodyFrames int
	// RequestTrailersAnswered and ResponseTrailersAnswered say the picker
	// answered the trailers.
	RequestTrailersAnswered, ResponseTrailersAnswered bool
	// Served is the endpoint that answered; Status its status.
	Served string
	Status int
	// ResponseSetHeaders are the response headers the picker added.
	ResponseSetHeaders map[string]string
	// Response is the response body the client gets; ResponseEnd says the
	// picker's last response frame ended the stream.
	Response    []byte
	ResponseEnd bool
	// Cancelled says the call was cancelled mid-response.
	Cancelled bool
}

// Destinations splits Destination at its commas.
func (o *Outcome) Destinations() []string {
	if o.Destination == "" {
		return nil
	}
	return strings.Split(o.Destination, ",")
}

// Do runs c against the picker behind client.
func Do(ctx context.Context, client extprocv3.ExternalProcessorClient, c Call) (*Outcome, error) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := client.Process(ctx)
	if err != nil {
		return nil, err
	}
	g := &gw{st: st, out: &Outcome{SetHeaders: map[string]string{}, ResponseSetHeaders: map[string]string{}}}
	// The picker may answer (and end the stream) before the last frame:
	// a Send then fails with io.EOF, and the answer is read below.
	if err := g.sendRequest(c); err != nil && err != io.EOF {
		return nil, err
	}
	routed, err := g.readRequestAnswers(c)
	if err != nil || !routed || c.NoUpstream {
		st.CloseSend()
		return g.out, err
	}
	return g.out, g.upstream(ctx, cancel, c)
}

// gw is one call's stream.
type gw struct {
	st  extprocv3.ExternalProcessor_ProcessClient
	out *Outcome
}

func (g *gw) sendRequest(c Call) error {
	hs := []*corev3.HeaderValue{
		{Key: ":method", RawValue: []byte(c.Method)}, {Key: ":path", RawValue: []byte(c.Path)},
		{Key: ":authority", RawValue: []byte("gateway.test")}, {Key: ":scheme", RawValue: []byte("http")},
	}
	if len(c.Body) > 0 {
		hs = append(hs, &corev3.HeaderValue{Key: "content-length", RawValue: []byte(strconv.Itoa(len(c.Body)))})
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			hs = append(hs, &corev3.HeaderValue{Key: strings.ToLower(k), RawValue: []byte(v)})
		}
	}
	msg := &extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: &corev3.HeaderMap{Headers: hs}, EndOfStream: len(c.Body) == 0 && !c.Trailers}},
		ProtocolConfig: &extprocv3.ProtocolConfiguration{
			RequestBodyMode: filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, ResponseBodyMode: filterv3.ProcessingMode_FULL_DUPLEX_STREAMED},
	}
	if c.Subset != nil {
		var v *structpb.Value
		if c.SubsetString {
			v = structpb.NewStringValue(strings.Join(c.Subset, ","))
		} else {
			l := make([]*structpb.Value, len(c.Subset))
			for i, s := range c.Subset {
				l[i] = structpb.NewStringValue(s)
			}
			v = structpb.NewListValue(&structpb.ListValue{Values: l})
		}
		msg.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
			"envoy.lb.subset_hint": {Fields: map[string]*structpb.Value{"x-gateway-destination-endpoint-subset": v}}}}
	}
	if err := g.st.Send(msg); err != nil {
		return err
	}
	if len(c.Body) > 0 {
		frames := cut(c.Body, c.Frames, c.Cuts)
		for i, f := range frames {
			end := i == len(frames)-1 && !c.Trailers
			if err := g.st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
				RequestBody: &extprocv3.HttpBody{Body: f, EndOfStream: end}}}); err != nil {
				return err
			}
		}
	}
	if c.Trailers {
		return g.st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{
			RequestTrailers: &extprocv3.HttpTrailers{Trailers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: "x-trailer", RawValue: []byte("1")}}}}}})
	}
	return nil
}

// cut splits body into n frames (or at cuts).
func cut(body []byte, n int, cuts []int) [][]byte {
	if len(cuts) == 0 {
		n = max(n, 1)
		size := (len(body) + n - 1) / n
		for i := size; i < len(body); i += size {
			cuts = append(cuts, i)
		}
	}
	var out [][]byte
	prev := 0
	for _, c := range cuts {
		if c <= prev || c >= len(body) {
			continue
		}
		out = append(out, body[prev:c])
		prev = c
	}
	return append(out, body[prev:])
}

// readRequestAnswers reads the picker's answers to the request until it
// routed (the headers answer and the whole body) or refused.
func (g *gw) readRequestAnswers(c Call) (routed bool, err error) {
	o := g.out
	headers, bodyDone, trailersDone := false, len(c.Body) == 0 && !c.Trailers, !c.Trailers
	for !(headers && bodyDone && trailersDone) {
		r, err := g.st.Recv()
		if err != nil {
			return false, fmt.Errorf("epptest: reading the request answers: %w", err)
		}
		switch m := r.Response.(type) {
		case *extprocv3.ProcessingResponse_ImmediateResponse:
			o.Immediate = m.ImmediateResponse
			return false, nil
		case *extprocv3.ProcessingResponse_RequestHeaders:
			headers = true
			cr := m.RequestHeaders.GetResponse()
			o.ClearRouteCache = cr.GetClearRouteCache()
			for _, h := range cr.GetHeaderMutation().GetSetHeaders() {
				o.SetHeaders[h.GetHeader().GetKey()] = string(h.GetHeader().GetRawValue())
			}
			o.RemoveHeaders = cr.GetHeaderMutation().GetRemoveHeaders()
			o.Destination = o.SetHeaders["x-gateway-destination-endpoint"]
			if ns := r.GetDynamicMetadata().GetFields()["envoy.lb"]; ns != nil {
				o.MetadataDestination = ns.GetStructValue().GetFields()["x-gateway-destination-endpoint"].GetStringValue()
			}
		case *extprocv3.ProcessingResponse_RequestBody:
			o.RequestBodyFrames++
			if sr := m.RequestBody.GetResponse().GetBodyMutation().GetStreamedResponse(); sr != nil {
				o.Forwarded = append(o.Forwarded, sr.GetBody()...)
				if sr.GetEndOfStream() {
					o.ForwardedEnd, bodyDone = true, true
				}
			} else {
				// No mutation: the frame the gateway holds passes as it was.
				// Frames are answered in order, so this is frame n.
				frames := cut(c.Body, c.Frames, c.Cuts)
				if o.RequestBodyFrames <= len(frames) {
					o.Forwarded = append(o.Forwarded, frames[o.RequestBodyFrames-1]...)
				}
				if o.RequestBodyFrames >= len(frames) {
					o.ForwardedEnd, bodyDone = !c.Trailers, true
				}
			}
			if c.Trailers && o.RequestBodyFrames > 0 && len(o.Forwarded) >= len(c.Body) {
				bodyDone = true
			}
		case *extprocv3.ProcessingResponse_RequestTrailers:
			o.RequestTrailersAnswered, trailersDone = true, true
		default:
			return false, fmt.Errorf("epptest: unexpected answer %T before the response", m)
		}
	}
	return true, nil
}

// errNoEndpoint: no endpoint of the destination answered.
var errNoEndpoint = errors.New("epptest: no destination endpoint answered")

// upstream sends the forwarded request to the destination (the first that
// answers), then plays the response through the picker.
func (g *gw) upstream(ctx context.Context, cancel context.CancelFunc, c Call) error {
	o := g.out
	header := http.Header{}
	for k, vs := range c.Header {
		header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	for _, k := range o.RemoveHeaders {
		header.Del(k)
	}
	for k, v := range o.SetHeaders {
		header.Set(k, v)
	}
	var resp *http.Response
	for _, ep := range o.Destinations() {
		req, err := http.NewRequestWithContext(ctx, c.Method, "http://"+ep+c.Path, strings.NewReader(string(o.Forwarded)))
		if err != nil {
			return err
		}
		req.Header = header.Clone()
		req.ContentLength = int64(len(o.Forwarded))
		if resp, err = http.DefaultClient.Do(req); err == nil {
			o.Served = ep
			break
		}
	}
	if resp == nil {
		return errNoEndpoint
	}
	defer resp.Body.Close()
	o.Status = resp.StatusCode
	served := o.Served
	if c.ServedOverride != "" {
		served = c.ServedOverride
	}
	hs := []*corev3.HeaderValue{{Key: ":status", RawValue: []byte(strconv.Itoa(resp.StatusCode))}}
	for k, vs := range resp.Header {
		for _, v := range vs {
			hs = append(hs, &corev3.HeaderValue{Key: strings.ToLower(k), RawValue: []byte(v)})
		}
	}
	if err := g.st.Send(&extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: hs}}},
		MetadataContext: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": {Fields: map[string]*structpb.Value{
			"x-gateway-destination-endpoint-served": structpb.NewStringValue(served)}}}},
	}); err != nil {
		return err
	}
	r, err := g.st.Recv()
	if err != nil {
		return fmt.Errorf("epptest: reading the response headers answer: %w", err)
	}
	for _, h := range r.GetResponseHeaders().GetResponse().GetHeaderMutation().GetSetHeaders() {
		o.ResponseSetHeaders[h.GetHeader().GetKey()] = string(h.GetHeader().GetRawValue())
	}
	return g.responseBody(resp.Body, cancel, c)
}

// responseBody relays the upstream body frame by frame through the picker.
func (g *gw) responseBody(body io.Reader, cancel context.CancelFunc, c Call) error {
	o := g.out
	buf := make([]byte, 16<<10)
	frames := 0
	for {
		n, rerr := body.Read(buf)
		end := rerr == io.EOF
		if rerr != nil && !end {
			return rerr
		}
		if n == 0 && !end {
			continue
		}
		if err := g.st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{Body: append([]byte(nil), buf[:n]...), EndOfStream: end && !c.ResponseTrailers}}}); err != nil {
			return err
		}
		frames++
		r, err := g.st.Recv()
		if err != nil {
			return fmt.Errorf("epptest: reading a response body answer: %w", err)
		}
		if sr := r.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse(); sr != nil {
			o.Response = append(o.Response, sr.GetBody()...)
			o.ResponseEnd = sr.GetEndOfStream()
		} else {
			o.Response = append(o.Response, buf[:n]...)
			o.ResponseEnd = end && !c.ResponseTrailers
		}
		if c.CancelAfter > 0 && frames >= c.CancelAfter && !end {
			o.Cancelled = true
			cancel()
			return nil
		}
		if end {
			break
		}
	}
	if !c.ResponseTrailers {
		return g.st.CloseSend()
	}
	if err := g.st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseTrailers{
		ResponseTrailers: &extprocv3.HttpTrailers{Trailers: &corev3.HeaderMap{}}}}); err != nil {
		return err
	}
	if r, err := g.st.Recv(); err == nil && r.GetResponseTrailers() != nil {
		o.ResponseTrailersAnswered = true
	}
	return g.st.CloseSend()
}
