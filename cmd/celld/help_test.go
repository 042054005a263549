package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHelpExitsZero runs the binary's main in a child process with each
// request for help: it prints the usage and exits 0.
func TestHelpExitsZero(t *testing.T) {
	if args := os.Getenv("CELLROUTER_TEST_MAIN_ARGS"); args != "" {
		os.Args = append([]string{"celld"}, strings.Fields(args)...)
		main()
		return
	}
	for _, tc := range []struct {
		args string
		want []string // in stdout or stderr
	}{
		{"--help", []string{"Usage of celld:", "-log-format", "-access-log-sample"}},
		{"-h", []string{"Usage of celld:", "-config"}},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelpExitsZero$")
		cmd.Env = append(os.Environ(), "CELLROUTER_TEST_MAIN_ARGS="+tc.args)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("celld %s: %v (want exit 0); stderr %q", tc.args, err, stderr.String())
			continue
		}
		if strings.Contains(stderr.String(), "help requested") {
			t.Errorf("celld %s: stderr %q reports help as an error", tc.args, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout.String()+stderr.String(), w) {
				t.Errorf("celld %s: output lacks %q: %s%s", tc.args, w, stdout.String(), stderr.String())
			}
		}
	}
}

// lockedBuffer is a log sink safe for the daemon's goroutines and the
// test's reads.
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

// TestLogFormatJSON starts celld with --log-format json and checks that
// every line it logs is a JSON object.
func TestLogFormatJSON(t *testing.T) {
	var logw lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--log-format", "json", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, io.Discard, &logw)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logw.String(), "\n") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("celld logged nothing (%v)", <-done)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(logw.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["msg"] == nil || m["level"] == nil {
			t.Errorf("line %q is not a JSON log record: %v", line, err)
		}
	}
}
