package discovery_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/discovery/kubetest"
)

// plane is the package's control plane, started once by TestMain; nil
// when the tools are absent (skipReason says why).
var (
	plane      *kubetest.Plane
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tools, err := kubetest.Tools()
	if err != nil {
		skipReason = err.Error()
		fmt.Println("discovery: tests against a real API server are skipped:", skipReason)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "cellrouter-k8s-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	if plane, err = kubetest.Start(tools, dir); err != nil {
		fmt.Fprintln(os.Stderr, "discovery: the control plane did not start:", err)
		return 1
	}
	defer plane.Stop()
	fmt.Printf("discovery: control plane up in %v (%s)\n", time.Since(start).Round(time.Millisecond), plane.Config.Host)
	return m.Run()
}

// needPlane skips a test, naming the reason, when there is no control
// plane, and returns it and a fresh namespace otherwise.
func needPlane(t *testing.T) (*kubetest.Plane, string) {
	t.Helper()
	if plane == nil {
		t.Skip("no Kubernetes control plane: " + skipReason)
	}
	ns := fmt.Sprintf("t-%d", time.Now().UnixNano()%1e9)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := plane.Setup(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return plane, ns
}

// eventually polls cond until it holds or the deadline passes; cond says
// what it saw, for the failure message.
func eventually(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v; last saw %s", what, within, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
