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
		{[]string{"--http-addr", "nonsense"}, "http_addr"},
		{[]string{"--max-probes", "0", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "max_probes"},
		{[]string{"--gossip-bind", "nope", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "bind"},
		{[]string{"--demo", "--demo-cells", "0"}, "Cells"},
		{[]string{"--tokenizer", "no-path"}, "MODEL=PATH"},
		{[]string{"--tokenizer", "m=/nonexistent/tokenizer.json", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "tokenize.models[0]"},
		{[]string{"--tokenizer", "m=/t.json,jinja", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "chat_template"},
		{[]string{"--tokenize-cache-mb", "-1", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "cache_bytes"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.want)
		}
	}
}
