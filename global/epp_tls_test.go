package global

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/cellrouter/cellrouter/internal/epp"
)

// TestGlobalPickerServesTLS checks that globald's endpoint picker serves
// TLS as its data plane does with ServeTLS (its certificate, no client
// certificate asked: the gateway is admitted by the keys in each
// request's headers), and refuses a plaintext gateway.
func TestGlobalPickerServesTLS(t *testing.T) {
	s := startSecureTier(t, func(c *Config) {
		c.Security.ServeTLS = true
		c.EPPAddr = "127.0.0.1:0"
	})
	addr := s.g.EPPAddr()
	if addr == "" {
		t.Fatal("no picker listener")
	}
	check := func(creds credentials.TransportCredentials) error {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: epp.LivenessService})
		return err
	}
	if err := check(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})); err != nil {
		t.Fatalf("liveness over TLS: %v", err)
	}
	if err := check(insecure.NewCredentials()); err == nil {
		t.Fatal("a plaintext gateway reached a picker that serves TLS")
	}
}
