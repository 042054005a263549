package global

import (
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/api"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestGRPCReflectionListsTheServices checks that grpcurl-style clients can
// list and describe the global tier's gRPC service.
func TestGRPCReflectionListsTheServices(t *testing.T) {
	g := startGlobal(t, StaticDirectory(nil))
	got := servertest.ReflectServices(t, g.GRPCAddr())
	want := []string{"cellrouter.global.v1.GlobalService", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}
	if !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
}

// TestServesCommittedOpenAPI checks that the globald serves the committed
// OpenAPI document of its REST control plane as api.Document completes it
// (title, the build's version, security, OpenAI's errors, the data plane).
func TestServesCommittedOpenAPI(t *testing.T) {
	g := startGlobal(t, StaticDirectory(nil))
	want, err := api.Document("global", buildinfo.Read().Version)
	if err != nil {
		t.Fatal(err)
	}
	code, got := get(t, "http://"+g.HTTPAddr()+"/openapi/global.swagger.json")
	if code != 200 || got != string(want) {
		t.Fatalf("GET /openapi/global.swagger.json = %d, %d bytes; want 200 and the %d bytes of the completed document", code, len(got), len(want))
	}
}
