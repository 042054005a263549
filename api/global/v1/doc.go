// Package globalv1 holds the generated Go code of global.proto: the global
// tier's control plane (route without sending, cells, drain), served by
// globald over gRPC and as REST through grpc-gateway. Regenerate with
// api/generate.sh.
package globalv1
