package global

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
)

func TestCompleteOverGRPC(t *testing.T) {
	hits := &sync.Map{}
	a := startTestCell(t, "cell-a", hits)
	g := startGlobal(t, StaticDirectory{a.view(t)})
	conn, err := grpc.NewClient(g.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": tokens(5, 64), "max_tokens": 2})
	stream, err := globalv1.NewGlobalServiceClient(conn).Complete(context.Background(), &globalv1.CompleteRequest{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if first.GetStatus() != 200 || first.GetHeaders()[CellHeader] != "cell-a" {
		t.Fatalf("first message %+v, want status 200 from cell-a", first)
	}
	var got strings.Builder
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got.Write(m.GetData())
	}
	if !strings.Contains(got.String(), "from cell-a-pod") {
		t.Fatalf("body %q", got.String())
	}
	// A bad body is an OpenAI error, relayed with its status.
	stream, _ = globalv1.NewGlobalServiceClient(conn).Complete(context.Background(), &globalv1.CompleteRequest{Body: []byte("{")})
	first, err = stream.Recv()
	if err != nil || first.GetStatus() != 400 {
		t.Fatalf("bad body: %+v, %v; want status 400", first, err)
	}
}
