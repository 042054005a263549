// Package servertest holds what the daemons' tests share when they talk to
// a running celld or globald: an HTTP request helper, an OpenAI error body
// decoder, a gRPC server-reflection client (what grpcurl list does) and a
// log buffer safe for the daemons' goroutines. It is for tests only, in the
// manner of net/http/httptest.
package servertest
