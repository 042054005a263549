package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// lockedBuffer is an output safe for the demo's goroutine and the test's
// reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDemoBannerReachesTheCells runs the demo and follows its banner: with
// the operator certificate it names, the cell's state and metrics answer
// over mutual TLS at the address it prints, and so does gRPC reflection.
func TestDemoBannerReachesTheCells(t *testing.T) {
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--demo", "--demo-cells", "1", "--demo-pods", "1", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, &out, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo: %v", err)
		}
	}()
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(out.String(), "grpcurl -cacert") {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("demo ended before its banner: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cell access in the banner: %s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	banner := out.String()
	files := regexp.MustCompile(`export CELLROUTER_TLS="--cacert (\S+) --cert (\S+) --key (\S+)"`).FindStringSubmatch(banner)
	state := regexp.MustCompile(`curl -s \$CELLROUTER_TLS (https://\S+/v1/cell/state)`).FindStringSubmatch(banner)
	metrics := regexp.MustCompile(`curl -s \$CELLROUTER_TLS (https://\S+/metrics)`).FindStringSubmatch(banner)
	grpcAddr := regexp.MustCompile(`grpcurl -cacert \S+ -cert \S+ -key \S+ (\S+) list`).FindStringSubmatch(banner)
	if files == nil || state == nil || metrics == nil || grpcAddr == nil {
		t.Fatalf("banner lacks the TLS files, the state and metrics commands or the grpcurl line:\n%s", banner)
	}
	// The files, read as curl reads them.
	ca, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("%s holds no certificate", files[1])
	}
	cert, err := tls.LoadX509KeyPair(files[2], files[3])
	if err != nil {
		t.Fatalf("the banner's certificate: %v", err)
	}
	tc := &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 30 * time.Second}
	get := func(url string) (int, string) {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get(state[1])
	var st struct {
		CellID string `json:"cellId"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil || st.CellID != "cell-0" {
		t.Errorf("GET %s = %d %s, want cell-0's state", state[1], code, body)
	}
	if code, body := get(metrics[1]); code != 200 || !strings.Contains(body, "cellrouter_") {
		t.Errorf("GET %s = %d, want the cell's metrics", metrics[1], code)
	}
	status := regexp.MustCompile(`curl -s \$CELLROUTER_TLS (https://\S+/status) `).FindStringSubmatch(banner)
	if status == nil {
		t.Fatalf("banner lacks the cell's status page:\n%s", banner)
	}
	if code, body := get(status[1]); code != 200 || !strings.Contains(body, "cell-0") || !strings.Contains(body, "<html") {
		t.Errorf("GET %s = %d, want cell-0's status page", status[1], code)
	}
	// Without the certificate the cell refuses the handshake.
	bare := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tc.RootCAs}}, Timeout: 30 * time.Second}
	if resp, err := bare.Get(state[1]); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("GET %s without a client certificate = 200, want a refusal", state[1])
		}
	}

	conn, err := grpc.NewClient(grpcAddr[1], grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(rctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("reflection at %s: %v", grpcAddr[1], err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !strings.Contains(strings.Join(names, " "), "CellService") {
		t.Errorf("reflection lists %v, want the CellService", names)
	}
}
