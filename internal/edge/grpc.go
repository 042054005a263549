package edge

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// Scopes maps gRPC full method names ("/cellrouter.cell.v1.CellService/
// Route") to the scope they need. A method it does not list (server
// reflection) needs a principal, of any scope.
type Scopes map[string]auth.Scope

// Add gives every method of the service sd the scope need, and returns s.
func (s Scopes) Add(sd protoreflect.ServiceDescriptor, need auth.Scope) Scopes {
	ms := sd.Methods()
	for i := range ms.Len() {
		s["/"+string(sd.FullName())+"/"+string(ms.Get(i).Name())] = need
	}
	return s
}

// Set gives the method called name of the service sd the scope need, and
// returns s. It panics when sd has no such method: a misspelt name would
// otherwise leave the method needing any principal at all.
func (s Scopes) Set(sd protoreflect.ServiceDescriptor, name string, need auth.Scope) Scopes {
	m := sd.Methods().ByName(protoreflect.Name(name))
	if m == nil {
		panic("edge: service " + string(sd.FullName()) + " has no method " + name)
	}
	s["/"+string(sd.FullName())+"/"+string(m.Name())] = need
	return s
}

// grpcCredentials reads what a call presents: its authorization metadata
// and, over TLS, whether its client certificate was verified.
func grpcCredentials(ctx context.Context) credentials {
	var c credentials
	md, _ := metadata.FromIncomingContext(ctx)
	c.authorization = md.Get("authorization")
	if v := md.Get(strings.ToLower(TenantHeader)); len(v) == 1 {
		c.peerTenant = v[0]
	}
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(grpccreds.TLSInfo); ok {
			st := ti.State
			c.peer = tlsconf.VerifiedPeer(&st)
			c.peerURIs = tlsconf.PeerURIs(&st)
		}
	}
	return c
}

// UnaryInterceptor returns the guard as a unary server interceptor: the
// call needs the scope scopes gives its method; the handler's context holds
// the principal.
func (g *Guard) UnaryInterceptor(scopes Scopes) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		need := scopes[info.FullMethod]
		limit := need == auth.ScopeInference
		p, tk, err := g.admit(grpcCredentials(ctx), need, limit)
		if err != nil {
			return nil, GRPCError(err)
		}
		defer g.done(p, tk, limit)
		return h(WithPrincipal(ctx, p), req)
	}
}

// StreamInterceptor is UnaryInterceptor for streaming methods.
func (g *Guard) StreamInterceptor(scopes Scopes) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		need := scopes[info.FullMethod]
		limit := need == auth.ScopeInference
		p, tk, err := g.admit(grpcCredentials(ss.Context()), need, limit)
		if err != nil {
			return GRPCError(err)
		}
		defer g.done(p, tk, limit)
		return h(srv, &principalStream{ServerStream: ss, ctx: WithPrincipal(ss.Context(), p)})
	}
}

// principalStream is a server stream whose context carries the principal.
type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *principalStream) Context() context.Context { return s.ctx }
