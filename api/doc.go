// Package api holds the project's protobuf services and the code generated
// from them: Go messages, gRPC stubs, grpc-gateway REST handlers and
// OpenAPI v2 documents, each in a versioned package beside its .proto file
// (api/events/v1, api/cell/v1).
//
// The generated code is committed. api/generate.sh regenerates all of it with
// pinned tool versions (see api/README.md), and the tests of this package
// check that every .proto file has its generated siblings.
//
// This package embeds the committed OpenAPI documents, which the daemons
// serve at OpenAPIPath (celld the cell's, globald the global tier's),
// completed at serve time by Document with what the protos cannot say: a
// title and the build's version, the bearer API key scheme, OpenAI's error
// body in place of rpcStatus, and the OpenAI-compatible data plane linked to
// OpenAI's own specification. Package apitest checks a served document.
package api
