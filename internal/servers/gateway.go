package servers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cellrouter/cellrouter/api/openai"
)

// NewGateway returns a grpc-gateway mux for a daemon's REST control plane
// whose errors take the data plane's shape, OpenAI's
// {"error":{"message","type","param","code"}}: the HTTP status is the
// gateway's mapping of the gRPC code (NotFound 404, InvalidArgument 400,
// Unavailable 503...), "message" is the status message, "type" is
// invalid_request_error for a 4xx and server_error otherwise, and "code"
// is the gRPC code in snake case ("not_found", "invalid_argument",
// "unavailable"). A path the gateway does not route is a 404 "not_found".
func NewGateway(opts ...runtime.ServeMuxOption) *runtime.ServeMux {
	opts = append([]runtime.ServeMuxOption{
		runtime.WithErrorHandler(gatewayError),
		runtime.WithRoutingErrorHandler(gatewayRoutingError),
	}, opts...)
	return runtime.NewServeMux(opts...)
}

// gatewayError is the gateway's runtime.ErrorHandlerFunc.
func gatewayError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, err error) {
	var hs *runtime.HTTPStatusError
	st := status.Convert(err)
	httpStatus := runtime.HTTPStatusFromCode(st.Code())
	if errors.As(err, &hs) {
		st, httpStatus = status.Convert(hs.Err), hs.HTTPStatus
	}
	// A streaming handler may have set these; an error body is not chunked.
	w.Header().Del("Trailer")
	w.Header().Del("Transfer-Encoding")
	openai.WriteErrorBody(w, httpStatus, openai.NewErrorBody(openai.TypeForStatus(httpStatus), st.Message(), "", CodeName(st.Code())))
}

// gatewayRoutingError is the gateway's runtime.RoutingErrorHandlerFunc.
// Mounted with MountGateway, the gateway sees only requests whose method
// and path shape one of its rules matches, so its 404 is a path that matched
// a shape but no rule (a missing or unknown ":verb"), and a 405 cannot
// happen there (the outer mux answers wrong methods, with Allow).
func gatewayRoutingError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	switch httpStatus {
	case http.StatusNotFound:
		openai.WriteNotFound(w, r)
	case http.StatusMethodNotAllowed:
		openai.WriteErrorBody(w, httpStatus, openai.NewErrorBody(openai.TypeInvalidRequest,
			"method "+r.Method+" is not allowed on "+r.URL.Path, "", openai.CodeMethodNotAllowed))
	default:
		openai.WriteErrorBody(w, httpStatus, openai.NewErrorBody(openai.TypeForStatus(httpStatus),
			http.StatusText(httpStatus), "", CodeName(codes.InvalidArgument)))
	}
}

// CodeName returns a gRPC code in snake case: "not_found" for NotFound.
func CodeName(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// MountGateway registers gw on mux under one method pattern per HTTP rule
// (google.api.http option, additional bindings included) of the services'
// methods, so that mux, not the gateway, answers unknown paths (404) and
// wrong methods (405 with Allow), which OpenAIErrors then writes as JSON.
// HEAD on a GET rule is served as GET (the server drops the body).
//
// A rule's path template becomes a mux pattern segment by segment:
// literals stay, a variable ("{id}", "{id=*}") becomes a wildcard, a
// trailing "{name=**}" a rest wildcard, and a custom verb after a variable
// (":drain") is left for the gateway to check. Other templates are an
// error.
func MountGateway(mux *http.ServeMux, gw http.Handler, services ...protoreflect.ServiceDescriptor) error {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			r = r.Clone(r.Context())
			r.Method = http.MethodGet
		}
		gw.ServeHTTP(w, r)
	})
	patterns, err := GatewayPatterns(services...)
	if err != nil {
		return err
	}
	for _, p := range patterns {
		mux.Handle(p, h)
	}
	return nil
}

// GatewayPatterns returns the mux patterns MountGateway registers for the
// services, without duplicates, in the order of their methods.
func GatewayPatterns(services ...protoreflect.ServiceDescriptor) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var add func(m protoreflect.MethodDescriptor, rule *annotations.HttpRule) error
	add = func(m protoreflect.MethodDescriptor, rule *annotations.HttpRule) error {
		method, tmpl := ruleMethod(rule)
		if method == "" {
			return fmt.Errorf("servers: %s: http rule without a pattern", m.FullName())
		}
		p, err := muxPattern(method, tmpl)
		if err != nil {
			return fmt.Errorf("servers: %s: %w", m.FullName(), err)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
		for _, b := range rule.GetAdditionalBindings() {
			if err := add(m, b); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range services {
		methods := s.Methods()
		for i := range methods.Len() {
			m := methods.Get(i)
			rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
			if rule == nil {
				continue // gRPC only
			}
			if err := add(m, rule); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// ruleMethod returns an HTTP rule's method and path template.
func ruleMethod(r *annotations.HttpRule) (method, tmpl string) {
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return http.MethodGet, p.Get
	case *annotations.HttpRule_Put:
		return http.MethodPut, p.Put
	case *annotations.HttpRule_Post:
		return http.MethodPost, p.Post
	case *annotations.HttpRule_Delete:
		return http.MethodDelete, p.Delete
	case *annotations.HttpRule_Patch:
		return http.MethodPatch, p.Patch
	case *annotations.HttpRule_Custom:
		return p.Custom.GetKind(), p.Custom.GetPath()
	}
	return "", ""
}

// muxPattern turns a rule's path template into an http.ServeMux pattern.
func muxPattern(method, tmpl string) (string, error) {
	if !strings.HasPrefix(tmpl, "/") {
		return "", fmt.Errorf("path template %q does not start with /", tmpl)
	}
	segs := strings.Split(tmpl[1:], "/")
	for i, s := range segs {
		if !strings.ContainsAny(s, "{}") {
			continue
		}
		last := i == len(segs)-1
		end := strings.IndexByte(s, '}')
		if !strings.HasPrefix(s, "{") || end < 0 {
			return "", fmt.Errorf("path template %q: segment %q: only whole-segment variables are supported", tmpl, s)
		}
		if rest := s[end+1:]; rest != "" && !(last && strings.HasPrefix(rest, ":")) {
			return "", fmt.Errorf("path template %q: segment %q: text after a variable", tmpl, s)
		}
		wild := fmt.Sprintf("{v%d}", i)
		if _, pat, ok := strings.Cut(s[1:end], "="); ok {
			switch {
			case pat == "*":
			case pat == "**" && last:
				wild = fmt.Sprintf("{v%d...}", i)
			default:
				return "", fmt.Errorf("path template %q: variable pattern %q is not supported", tmpl, pat)
			}
		}
		segs[i] = wild
	}
	return method + " /" + strings.Join(segs, "/"), nil
}
