package cell

import (
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cell/podset"
)

// TestRefusedPodsInStateAndCandidates publishes what a discovery source
// would (a pod refused for the cap, and a pod with a static pod's id) and
// checks that /v1/cell/state lists both refusals and that the static pod
// keeps its configured address among the candidates.
func TestRefusedPodsInStateAndCandidates(t *testing.T) {
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "p1", Address: "127.0.0.1:1"}, {ID: "p2", Address: "127.0.0.1:2"}}
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	waitFor(t, "healthz", func() bool { code, _ := get(t, base+"/healthz"); return code == 200 })
	if n := len(c.router.candidates(nil)); n != 2 {
		t.Fatalf("got %d candidates, want 2", n)
	}
	c.PodSet().Publish(podset.SourceKubernetes,
		[]podset.Pod{{ID: "p1", Address: "10.0.0.9:8000", Routable: true}},
		[]podset.Refusal{{ID: "big-7", Source: podset.SourceKubernetes, Reason: podset.ReasonCap}})
	_, body := get(t, base+"/v1/cell/state")
	for _, want := range []string{`"refusedPods"`, `"id":"big-7"`, `"reason":"cap"`, `"id":"p1"`, `"reason":"static"`} {
		if !strings.Contains(strings.ReplaceAll(body, " ", ""), want) {
			t.Errorf("/v1/cell/state lacks %s: %s", want, body)
		}
	}
	// The static p1 won: still routable at its configured address.
	for _, cand := range c.router.candidates(nil) {
		if cand.Pod == "p1" && cand.Address != "127.0.0.1:1" {
			t.Errorf("got p1 at %s, want its static address", cand.Address)
		}
	}
}
