package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/cellrouter/cellrouter/internal/buildinfo"
)

// TestVersion checks that "loadtest --version" (and "loadtest version")
// prints one line naming the tool and its build.
func TestVersion(t *testing.T) {
	want := buildinfo.Read().String("loadtest") + "\n"
	for _, arg := range []string{"--version", "version"} {
		var out bytes.Buffer
		if err := dispatch(context.Background(), []string{arg}, &out, &out); err != nil {
			t.Fatalf("dispatch(%s): %v", arg, err)
		}
		if got := out.String(); got != want {
			t.Errorf("dispatch(%s) got %q, want %q", arg, got, want)
		}
	}
}
