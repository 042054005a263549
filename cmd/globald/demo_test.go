package main

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/global"
)

// TestDemoNamesATakenPort runs the demo on an HTTP port another listener
// holds: run returns an error naming the port and the flag (before the
// fix, the demo fleet's double Close panicked with "close of closed
// channel").
func TestDemoNamesATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	args := []string{"--demo", "--demo-cells", "1", "--demo-pods", "1", "--http-addr", addr, "--grpc-addr", "127.0.0.1:0"}
	err = run(context.Background(), args, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("run: got nil, want an error for the taken port")
	}
	for _, want := range []string{addr, "--http-addr", "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("run: got %q, want it to mention %q", err, want)
		}
	}
}

// TestDefaultPortsAreNotVLLMs checks globald's default ports stay off
// vLLM's (8000, and 8001 for the pods' second
// port in the README), SGLang's 30000 and celld's (8080, 9090).
func TestDefaultPortsAreNotVLLMs(t *testing.T) {
	d := global.DefaultConfig()
	for _, a := range []string{d.HTTPAddr, d.GRPCAddr} {
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		switch port {
		case "8000", "8001", "8080", "9090", "30000":
			t.Errorf("default address %s collides with an engine's or celld's default port", a)
		}
	}
}
