package global

import (
	"os"
	"slices"
	"testing"

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

// TestServesCommittedOpenAPI checks that globald serves the committed
// OpenAPI document of its REST control plane, byte for byte.
func TestServesCommittedOpenAPI(t *testing.T) {
	g := startGlobal(t, StaticDirectory(nil))
	want, err := os.ReadFile("../api/global/v1/global.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	code, got := get(t, "http://"+g.HTTPAddr()+"/openapi/global.swagger.json")
	if code != 200 || got != string(want) {
		t.Fatalf("GET /openapi/global.swagger.json = %d, %d bytes; want 200 and the %d committed bytes", code, len(got), len(want))
	}
}
