// Package edge is what both daemons put in front of their handlers: who a
// request acts for and whether it may (API keys, scopes, the tenant an
// authenticated peer vouches for), the tenant's limits, and the limits that
// keep one client from holding a server (header and body size, slow
// clients, concurrent streams). Each is a decorator around an http.Handler
// or a gRPC interceptor; the decisions come from package internal/auth, and
// this package adds the protocols, the metrics and the answers.
//
// # Who a request acts for
//
// A Guard holds the current key table (nil: authentication off). A request
// acts for the principal of its key (the Authorization header, "Bearer
// KEY", or the gRPC metadata of the same name), or, on a server that
// trusts peers, with the scopes of the roles its client certificate of the
// tier's CA names (mutual TLS; auth.ParsePeerURIs, GuardConfig
// DefaultPeerRoles for a certificate naming none), and, for the global
// role, for the tenant its peer names in TenantHeader: globald
// authenticates the client and its limits where the request enters, and
// the cell believes the tenant only over that authenticated hop. A peer
// whose roles lack a scope may present an API key that has it. A client can never pick its tenant: the header is removed from
// every request that did not come from a verified peer. A key-authenticated
// request loses its Authorization header before the handler runs (unless
// the guard keeps it for a next hop that is not mutually authenticated), so
// keys do not travel to cells or engines; nothing here logs a key.
//
// # Answers
//
// Every refusal is answered in one place (WriteHTTP, GRPCError): OpenAI's
// error shape with the status a client expects, 401 for a missing or
// unknown key (with WWW-Authenticate), 403 for a missing scope, 429 with
// Retry-After past a tenant's limits, 413, 431 and 408 for bodies, headers
// and slow bodies past the server's limits, 503 with Retry-After when the
// server holds its most streams; and the matching gRPC codes
// (Unauthenticated, PermissionDenied, ResourceExhausted, InvalidArgument,
// DeadlineExceeded, Unavailable).
//
// net/http refuses some requests itself before any handler runs, in plain
// text: a head past its hard header bound (431), an HTTP/1.1 request
// without Host or a head it cannot parse (400), a Transfer-Encoding it
// does not know (501); a head that does not arrive in time gets a 400 or
// nothing. It has no hook for them, so WrapListener's connections answer
// for it (refusal.go): NewHTTPServer marks a connection busy while a
// handler has its request, and whatever the server writes on a connection
// that is not busy is its own refusal, which the connection replaces with
// the same status in OpenAI's shape (a head cut off by ReadHeaderTimeout:
// 408 request_timeout, also when the server would have closed without a
// word). To see the plain HTTP the server writes, WrapListener terminates
// TLS itself, under the wrapper; it completes the handshake when the
// server asks for the connection's TLS state, so Request.TLS is as with
// tls.NewListener. HTTP/1.0 requests without Host are served (HTTP/1.0
// does not require Host).
//
// # Limits
//
// Limits bound what one request may hold (Harden and NewHTTPServer for
// HTTP, GRPCServerOptions for gRPC): header bytes, body bytes, the time to
// send the headers and the body (a slow-body client is cut off with 408
// instead of holding a connection open), idle keep-alive connections, and
// concurrent requests or streams. Each hit is counted in
// cellrouter_limit_hits_total{limit}.
//
// # Memory
//
// A Budget bounds the data-plane request bodies a process holds at once,
// all clients together (Limits.MaxBufferedBytes): the guard reserves a
// body's announced length before the handler reads it (a chunked body as
// it arrives) and releases it when the handler returns; past the budget
// the request gets 503 with Retry-After, its body drained but never kept
// (cellrouter_buffered_request_bytes, limit "buffer_budget"). A tenant
// without max_concurrent in the key file gets Limits.TenantMaxConcurrent.
// After a flood drains, Budget.Trim returns the free memory to the OS.
package edge
