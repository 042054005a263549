package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestRunRejectsBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--config", "does-not-exist.yaml"}, "does-not-exist.yaml"},
		{[]string{"--http-addr", "nonsense"}, "http_addr"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--busy-threshold", "1.5"}, "busy_threshold"},
		{[]string{"--router-temperature", "-1"}, "router_temperature"},
		{[]string{"--kv-overlap-score-weight", "-2"}, "kv_overlap_score_weight"},
		{[]string{"--max-body-bytes", "10"}, "max_body_bytes"},
		{[]string{"--max-header-bytes", "10"}, "limits.max_header_bytes"},
		{[]string{"--body-timeout", "0s"}, "limits.body_timeout"},
		{[]string{"--max-concurrent-streams", "0"}, "limits.max_concurrent_streams"},
		{[]string{"--tls-cert", "c.pem", "--tls-ca", "ca.pem"}, "tls.key_file"},
		{[]string{"--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem", "--tls-ca", "/nonexistent/ca.pem", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "nonexistent"},
		{[]string{"--api-keys", "/nonexistent/keys.yaml", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "auth.key_file"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.want)
		}
	}
}
