package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/auth"
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
		{[]string{"--http-addr", "nonsense"}, "http_addr"},
		{[]string{"--max-probes", "0", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "max_probes"},
		{[]string{"--gossip-bind", "nope", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "bind"},
		{[]string{"--demo", "--demo-cells", "0"}, "Cells"},
		{[]string{"--tokenizer", "no-path"}, "MODEL=PATH"},
		{[]string{"--tokenizer", "m=/nonexistent/tokenizer.json", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "tokenize.models[0]"},
		{[]string{"--tokenizer", "m=/t.json,jinja", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "chat_template"},
		{[]string{"--tokenize-cache-mb", "-1", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "cache_bytes"},
		{[]string{"--max-body-bytes", "10", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "max_body_bytes"},
		{[]string{"--idle-timeout", "0s", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "idle_timeout"},
		{[]string{"--max-buffered-bytes", "1024", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "max_buffered_bytes"},
		{[]string{"--tenant-max-concurrent", "-1", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "tenant_max_concurrent"},
		{[]string{"--max-prompt-bytes", "-1", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "prompts.max_bytes"},
		{[]string{"--prompt-limit", "nonsense"}, "MODEL=MAX_BYTES,MAX_TOKENS"},
		{[]string{"--prompt-limit", "m=5,many"}, "MAX_TOKENS"},
		{[]string{"--memory-limit-ratio", "2"}, "memory_limit_ratio"},
		{[]string{"--serve-tls", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "serve_tls"},
		{[]string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "tls.ca_file"},
		{[]string{"--api-keys", "/nonexistent/keys.yaml", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, "key file"},
		{[]string{"--gossip-keyring", "/nonexistent/keyring", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0", "--gossip-bind", "127.0.0.1:0"}, "keyring_file"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.want)
		}
	}
}

// TestKeygen checks that keygen prints a key and the key-file entry that
// grants it, which a key file accepts.
func TestKeygen(t *testing.T) {
	var out strings.Builder
	if err := keygen([]string{"--tenant", "acme", "--scopes", "inference,admin", "--name", "ci"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	key := strings.TrimSpace(strings.TrimPrefix(lines[1], "#"))
	entry := strings.Join(lines[3:], "\n")
	tab, err := auth.ParseKeyFile([]byte("tenants: [{name: acme}]\nkeys:\n" + entry))
	if err != nil {
		t.Fatalf("the printed entry does not parse: %v\n%s", err, out.String())
	}
	p, err := tab.Authenticate("Bearer " + key)
	if err != nil || p.TenantName() != "acme" || p.Scopes != auth.ScopeInference|auth.ScopeAdmin {
		t.Errorf("the printed key: %+v, %v; want acme with inference and admin", p, err)
	}
	for _, bad := range [][]string{{"--tenant", "a b"}, {"--tenant", "acme", "--scopes", "root"}} {
		if err := keygen(bad, io.Discard, io.Discard); err == nil {
			t.Errorf("keygen %q: got nil, want an error", bad)
		}
	}
}

// TestPromptLimitFlag checks --prompt-limit's parsing: both fields, one
// left empty (the default's), repeated models.
func TestPromptLimitFlag(t *testing.T) {
	p := promptLimits{}
	for _, v := range []string{"llama=1000,256", "qwen=,4096"} {
		if err := p.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	if p["llama"] != (openai.PromptLimit{MaxBytes: 1000, MaxTokens: 256}) || p["qwen"] != (openai.PromptLimit{MaxTokens: 4096}) {
		t.Fatalf("got %+v", p)
	}
	for _, bad := range []string{"=1,2", "m=1", "m=x,2"} {
		if err := p.Set(bad); err == nil {
			t.Errorf("Set(%q): got nil, want an error", bad)
		}
	}
}
