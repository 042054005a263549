package cell

import (
	"context"
	"fmt"
	"testing"

	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/cell/podset"
	"github.com/cellrouter/cellrouter/internal/auth"
)

// BenchmarkFlowAdmitOverhead measures what flow control adds to a request
// when no pod is saturated (the fast path every request takes while the
// fleet has room): the saturation of its best pod, judged from the
// router's load and kv_blocks, the admission, the placement (Grant.Place,
// which placeFlow asks) and the end.
func BenchmarkFlowAdmitOverhead(b *testing.B) {
	var pods []podset.Pod
	tr := load.NewTracker()
	names := make([]string, 16)
	for i := range names {
		names[i] = fmt.Sprintf("pod-%d", i)
		pods = append(pods, podset.Pod{ID: names[i], Address: "127.0.0.1:1", KVBlocks: 10000, Routable: true})
		tr.Start(names[i], 100, 10, "")
	}
	cfg := flowcontrol.DefaultConfig()
	sat := &podSaturation{cfg: cfg, tracker: tr, pods: podset.New(pods), blockSize: 16}
	c := flowcontrol.New(cfg, sat, nil)
	r := flowcontrol.Request{Tenant: "t", Band: auth.PriorityStandard, Weight: 1, Tokens: 1000, Pods: names}
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		g, err := c.Admit(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		if g.Place(names, nil) >= 0 {
			b.Fatal("a pod with room moved")
		}
		g.Started()
		g.Done(1000)
	}
}
