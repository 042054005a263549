package cell

import (
	"context"
	"crypto/tls"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// publishOnce opens a Publish stream on conn (with key, if any), sends one
// request for pod numbered id and returns the response, or the stream's
// error.
func publishOnce(t *testing.T, conn *grpc.ClientConn, key, pod string, id uint64) (*eventsv1.PublishResponse, error) {
	t.Helper()
	ctx := context.Background()
	if key != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	st, err := eventsv1.NewEventPublisherClient(conn).Publish(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Send(&eventsv1.PublishRequest{Pod: pod, Model: "m", EventId: id}); err != nil && err != io.EOF {
		return nil, err
	}
	resp, err := st.Recv()
	_ = st.CloseSend()
	return resp, err
}

// TestPublishBoundToPods publishes over a real gRPC socket with mutual
// TLS: an events key or a publisher certificate may publish only for the
// pods it names (PermissionDenied otherwise, counted); a key without pods
// may publish for the cell's configured pods, and a pod the cell does not
// know is rejected without becoming a pod; globald's certificate (no role:
// global) may probe but neither publish nor administer.
func TestPublishBoundToPods(t *testing.T) {
	s := startSecureCell(t, tlsconf.VerifyClientCertIfGiven)
	dial := func(c *tls.Config) *grpc.ClientConn {
		conn, err := grpc.NewClient(s.c.GRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(c)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	anon, peer, admin, pub := dial(s.anon), dial(s.peer), dial(s.admin), dial(s.pub)
	for _, tt := range []struct {
		name       string
		conn       *grpc.ClientConn
		key, pod   string
		id         uint64
		wantCode   codes.Code
		wantStatus eventsv1.PublishStatus
	}{
		{"key for pod-a, pod-a", anon, "pub-a-key", "pod-a", 0, codes.OK, eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED},
		{"key for pod-a, pod-b", anon, "pub-a-key", "pod-b", 0, codes.PermissionDenied, 0},
		{"key for pod-a, a pod named like it", anon, "pub-a-key", "pod-a2", 0, codes.PermissionDenied, 0},
		{"key for pod-a, pod-a by its address", anon, "pub-a-key", s.pod.addr(), 1, codes.OK, eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED},
		{"key without pods, a configured pod", anon, "pub-key", "pod-a", 0, codes.OK, eventsv1.PublishStatus_PUBLISH_STATUS_DUPLICATE},
		{"key without pods, an unknown pod", anon, "pub-key", "ghost", 0, codes.OK, eventsv1.PublishStatus_PUBLISH_STATUS_REJECTED},
		{"publisher certificate, its pod", pub, "", "pod-a", 0, codes.OK, eventsv1.PublishStatus_PUBLISH_STATUS_DUPLICATE},
		{"publisher certificate, another pod", pub, "", "pod-b", 0, codes.PermissionDenied, 0},
		{"globald's certificate", peer, "", "pod-a", 0, codes.PermissionDenied, 0},
		{"admin certificate", admin, "", "pod-a", 0, codes.PermissionDenied, 0},
	} {
		resp, err := publishOnce(t, tt.conn, tt.key, tt.pod, tt.id)
		if status.Code(err) != tt.wantCode {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.wantCode)
			continue
		}
		if err == nil && resp.GetStatus() != tt.wantStatus {
			t.Errorf("%s: got status %v (%s), want %v", tt.name, resp.GetStatus(), resp.GetReason(), tt.wantStatus)
		}
	}

	// No phantom pod, and the refusals are counted.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pods, err := cellv1.NewCellServiceClient(admin).ListPods(ctx, &cellv1.ListPodsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.GetPods()) != 1 || pods.GetPods()[0].GetId() != "pod-a" {
		t.Errorf("got pods %v, want only pod-a", pods.GetPods())
	}
	code, _, body, err := s.call(t, s.admin, "GET", "/metrics", "", nil)
	if err != nil || code != 200 {
		t.Fatalf("metrics: %d %v", code, err)
	}
	for _, want := range []string{`reason="forbidden_pod",transport="grpc"} 3`, `reason="unknown_pod",transport="grpc"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !strings.Contains(s.logs.String(), "may not publish") && !strings.Contains(s.logs.String(), "does not name") {
		t.Errorf("no warning logged for the refused publishers:\n%s", s.logs.String())
	}

	// globald's certificate probes (Route) but reads no state; an admin
	// certificate does both.
	for _, tt := range []struct {
		name      string
		conn      *grpc.ClientConn
		wantRoute codes.Code
		wantState codes.Code
	}{
		{"globald", peer, codes.OK, codes.PermissionDenied},
		{"admin", admin, codes.OK, codes.OK},
		{"publisher", pub, codes.PermissionDenied, codes.PermissionDenied},
	} {
		_, err := cellv1.NewCellServiceClient(tt.conn).Route(ctx, &cellv1.RouteRequest{Model: "m", TokenIds: []uint32{1, 2, 3}})
		if status.Code(err) != tt.wantRoute {
			t.Errorf("Route by %s: got %v, want %v", tt.name, err, tt.wantRoute)
		}
		_, err = cellv1.NewCellServiceClient(tt.conn).GetCellState(ctx, &cellv1.GetCellStateRequest{})
		if status.Code(err) != tt.wantState {
			t.Errorf("GetCellState by %s: got %v, want %v", tt.name, err, tt.wantState)
		}
	}
}
