// Package servers is the part of a daemon's lifecycle that celld and
// globald share: building the gRPC server (traced, with server reflection),
// serving an HTTP and a gRPC server on their listeners, and stopping both
// within a deadline; and the shape of their HTTP answers outside the
// handlers: OpenAIErrors turns the mux's own 404 and 405 into OpenAI error
// bodies, NewGateway and MountGateway put the REST control plane
// (grpc-gateway) behind the same mux with errors of the same shape.
package servers
