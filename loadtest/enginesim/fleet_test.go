package enginesim

import (
	"net/http"
	"testing"
)

// TestFleet starts pods on distinct ports, checks each answers /health and
// exposes its endpoints, and that Close stops them all.
func TestFleet(t *testing.T) {
	fc := DefaultFleetConfig()
	fc.Pods = 3
	fc.Pod = testConfig()
	fc.Pod.Events = DefaultConfig().Events
	f, err := StartFleet(fc)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, p := range f.Pods() {
		for _, addr := range []string{p.HTTPAddr(), p.ZMQEndpoint(), p.ReplayEndpoint()} {
			if addr == "" || seen[addr] {
				t.Errorf("pod %d: got address %q, want a distinct non-empty one", i, addr)
			}
			seen[addr] = true
		}
		if p.ID() != p.HTTPAddr() || p.Topic() != "kv@"+p.HTTPAddr()+"@"+DefaultModel {
			t.Errorf("pod %d: got id %q topic %q, want the HTTP address and kv@<addr>@%s", i, p.ID(), p.Topic(), DefaultModel)
		}
		if r := get(t, p, PathHealth); r.status != http.StatusOK {
			t.Errorf("pod %d: health got %d, want 200", i, r.status)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := http.Get(f.Pod(0).URL() + PathHealth); err == nil {
		t.Errorf("pod 0 still answers after Close")
	}
}
