package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/internal/buildinfo"
)

// TestVersion checks that --version prints one line naming the daemon and
// its build, and starts nothing.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := buildinfo.Read().String("globald") + "\n"
	if got := out.String(); got != want || !strings.HasPrefix(got, "globald ") {
		t.Errorf("--version got %q, want %q", got, want)
	}
}

// TestGossipName checks that --gossip-name names the replica in the pool:
// replicas that bind the same wildcard address (pods of one Deployment)
// would otherwise share the default name global/<http address>.
func TestGossipName(t *testing.T) {
	_, logs, errc, stop := startRun(t, "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
		"--gossip-bind", "127.0.0.1:0", "--gossip-name", "global/pod-a")
	got := waitMatch(t, logs, regexp.MustCompile(`msg=globald .*name=(\S+)`), errc)
	if got != "global/pod-a" {
		t.Errorf("pool name got %q, want global/pod-a", got)
	}
	if err := stop(); err != nil {
		t.Errorf("run: %v", err)
	}
}
