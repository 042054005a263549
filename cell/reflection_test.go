package cell

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// reflectServices asks a gRPC server, through server reflection (what
// grpcurl list does), for its services, and for the descriptor of each one
// that is not reflection itself.
func reflectServices(t *testing.T, addr string) []string {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("reflection: %v", err)
		}
		if e := resp.GetErrorResponse(); e != nil {
			t.Fatalf("reflection error %d: %s", e.GetErrorCode(), e.GetErrorMessage())
		}
		return resp
	}
	var names []string
	for _, s := range ask(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}).GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, n := range names {
		resp := ask(&reflectionpb.ServerReflectionRequest{
			MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: n}})
		if len(resp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
			t.Errorf("no descriptor for %s", n)
		}
	}
	slices.Sort(names)
	return names
}

// TestGRPCReflectionListsTheServices checks that grpcurl-style clients can
// list and describe the cell's gRPC services.
func TestGRPCReflectionListsTheServices(t *testing.T) {
	c := startCell(t, testConfig())
	got := reflectServices(t, c.GRPCAddr())
	want := []string{"cellrouter.cell.v1.CellService", "cellrouter.events.v1.EventPublisher",
		"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}
	if !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
}

// TestServesCommittedOpenAPI checks that the cell serves the committed
// OpenAPI document of its REST control plane, byte for byte.
func TestServesCommittedOpenAPI(t *testing.T) {
	c := startCell(t, testConfig())
	want, err := os.ReadFile("../api/cell/v1/cell.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	code, got := get(t, "http://"+c.HTTPAddr()+"/openapi/cell.swagger.json")
	if code != 200 || got != string(want) {
		t.Fatalf("GET /openapi/cell.swagger.json = %d, %d bytes; want 200 and the %d committed bytes", code, len(got), len(want))
	}
}
