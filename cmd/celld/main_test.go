package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
)

func TestRunRejectsBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--access-log-sample", "2", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "access_log.sample"},
		{[]string{"--decisions", "-1", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "decisions.size -1"},
		{[]string{"--decisions-top-k", "0", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "decisions.top_k 0"},
		{[]string{"--config", "does-not-exist.yaml"}, "does-not-exist.yaml"},
		{[]string{"--http-addr", "nonsense"}, "http_addr"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--busy-threshold", "1.5"}, "busy_threshold"},
		{[]string{"--router-temperature", "-1"}, "router_temperature"},
		{[]string{"--kv-overlap-score-weight", "-2"}, "kv_overlap_score_weight"},
		{[]string{"--kv-pressure-weight", "-1"}, "kv_pressure_weight"},
		{[]string{"--max-body-bytes", "10"}, "max_body_bytes"},
		{[]string{"--max-header-bytes", "10"}, "limits.max_header_bytes"},
		{[]string{"--body-timeout", "0s"}, "limits.body_timeout"},
		{[]string{"--max-concurrent-streams", "0"}, "limits.max_concurrent_streams"},
		{[]string{"--max-buffered-bytes", "1024"}, "limits.max_buffered_bytes"},
		{[]string{"--max-prompt-tokens", "-1"}, "routing.prompt_limits.max_tokens"},
		{[]string{"--memory-limit-ratio", "2"}, "memory_limit_ratio"},
		{[]string{"--tls-cert", "c.pem", "--tls-ca", "ca.pem"}, "tls.key_file"},
		{[]string{"--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem", "--tls-ca", "/nonexistent/ca.pem", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "nonexistent"},
		{[]string{"--api-keys", "/nonexistent/keys.yaml", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "auth.key_file"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.want)
		}
	}
}

// TestCheckConfig checks --check-config: a good file is summarised on
// stdout, a bad one is refused with the file and the field named, flags
// apply over the file, and nothing is served.
func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, yaml string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	example := "../../cell/testdata/celld.example.yaml"
	badZMQ := write("bad-zmq.yaml", "pods: [{id: a, address: 10.0.0.1:8000, zmq_endpoint: 10.0.0.1:5557}]\n")
	badKey := write("bad-key.yaml", "gossip: {bind: ':7947', seeds: [10.0.0.9:7946], secert_key: x}\n")
	wildcard := write("wildcard.yaml", "http_addr: 0.0.0.0:8080\ngrpc_addr: 0.0.0.0:9090\ngossip: {bind: ':7947'}\n")
	tests := []struct {
		name    string
		args    []string
		wantOut string
		wantErr string
	}{
		{"example", []string{"--check-config", example}, "ok: cell cell-a, http 127.0.0.1:8080", ""},
		{"same file as --config", []string{"--config", example, "--check-config", example}, "ok: cell cell-a", ""},
		{"flags apply", []string{"--check-config", example, "--cell-id", "cell-9"}, "ok: cell cell-9", ""},
		{"replica id flag", []string{"--check-config", example, "--replica-id", "r7"}, "replica r7", ""},
		{"advertise flag", []string{"--check-config", wildcard, "--gossip-advertise", "10.1.2.3:7947"}, "gossip :7947", ""},
		{"bad advertise flag", []string{"--check-config", wildcard, "--gossip-advertise", "10.1.2.3"}, "", "advertise"},
		{"gateway address flag", []string{"--check-config", wildcard, "--gateway-address", "10.1.2.3:8081"}, "gossip :7947", ""},
		{"bad gateway address flag", []string{"--check-config", wildcard, "--gateway-address", "0.0.0.0:8081"}, "", "gossip.gateway_address"},
		{"bad secret flag", []string{"--check-config", wildcard, "--gossip-secret-key", "not base64!"}, "", "secret key"},
		{"index layout flag", []string{"--check-config", example, "--index-layout", "paged"}, "ok: cell cell-a", ""},
		{"watch flags", []string{"--check-config", example, "--first-byte-timeout", "500ms", "--stream-idle-timeout", "5s", "--liveness-timeout", "300ms", "--eject-base-time", "1s"}, "ok: cell cell-a", ""},
		{"bad stream idle flag", []string{"--check-config", example, "--first-byte-timeout", "2s", "--stream-idle-timeout", "1s"}, "", "StreamIdleTimeout"},
		{"bad index layout flag", []string{"--check-config", example, "--index-layout", "pages"}, "", "unknown layout \"pages\""},
		{"zmq endpoint", []string{"--check-config", badZMQ}, "", "bad-zmq.yaml: cell: invalid config: pods[0]"},
		{"misspelt key", []string{"--check-config", badKey}, "", "secert_key"},
		{"missing file", []string{"--check-config", filepath.Join(dir, "none.yaml")}, "", "none.yaml"},
		{"two files", []string{"--config", badZMQ, "--check-config", example}, "", "different files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tt.args, &out, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("run(%q) got error %v, want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("run(%q) got %q, %v, want output containing %q", tt.args, out.String(), err, tt.wantOut)
			}
		})
	}
}

// TestVersion checks that --version prints one line naming the daemon and
// its build, and starts nothing.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := buildinfo.Read().String("celld") + "\n"
	if got := out.String(); got != want || !strings.HasPrefix(got, "celld ") {
		t.Errorf("--version got %q, want %q", got, want)
	}
}

// TestSummaryNamesDiscovery checks that --check-config's line says where
// a cell that discovers its pods finds them, not only its static pods.
func TestSummaryNamesDiscovery(t *testing.T) {
	cfg := cell.DefaultConfig()
	cfg.Discovery.Kubernetes.Enabled = true
	cfg.Discovery.Kubernetes.Selector = "app=vllm"
	cfg.Discovery.Kubernetes.Namespace = "llm"
	cfg.Discovery.Kubernetes.ZMQPort = 5557
	got := summary(cfg)
	for _, want := range []string{`0 pods, pods discovered by selector "app=vllm" in llm`, "zmq dial discovered pods on :5557"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
	cfg.Discovery.Kubernetes.InferencePool = "pool-a"
	if got := summary(cfg); !strings.Contains(got, "discovered by InferencePool pool-a") {
		t.Errorf("summary %q does not name the pool", got)
	}
	cfg.Discovery.Kubernetes.Enabled = false
	if got := summary(cfg); strings.Contains(got, "discovered") {
		t.Errorf("summary %q names discovery that is off", got)
	}
}
