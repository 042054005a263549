package cell

import (
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/api"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestGRPCReflectionListsTheServices checks that grpcurl-style clients can
// list and describe the cell's gRPC services.
func TestGRPCReflectionListsTheServices(t *testing.T) {
	c := startCell(t, testConfig())
	got := servertest.ReflectServices(t, c.GRPCAddr())
	want := []string{"cellrouter.cell.v1.CellService", "cellrouter.events.v1.EventPublisher",
		"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}
	if !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
}

// TestServesCommittedOpenAPI checks that the cell serves the committed
// OpenAPI document of its REST control plane as api.Document completes it
// (title, the build's version, security, OpenAI's errors, the data plane).
func TestServesCommittedOpenAPI(t *testing.T) {
	c := startCell(t, testConfig())
	want, err := api.Document("cell", buildinfo.Read().Version)
	if err != nil {
		t.Fatal(err)
	}
	code, got := get(t, "http://"+c.HTTPAddr()+"/openapi/cell.swagger.json")
	if code != 200 || got != string(want) {
		t.Fatalf("GET /openapi/cell.swagger.json = %d, %d bytes; want 200 and the %d bytes of the completed document", code, len(got), len(want))
	}
}
