package global

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/proxy"
)

// TestLoneCandidateIsHandedOffWithoutAProbe checks the data plane's short
// cut: a request whose summary search leaves one cell goes there without a
// probe, the cell reports its pick's match in MatchedBlocksHeader (which
// feeds the predicted-tokens metric), and with ProbeLone the probe is made
// as before. The dry run probes either way.
func TestLoneCandidateIsHandedOffWithoutAProbe(t *testing.T) {
	for _, probeLone := range []bool{false, true} {
		t.Run(fmt.Sprintf("probe_lone=%v", probeLone), func(t *testing.T) {
			hits := &sync.Map{}
			c := startTestCell(t, "cell-a", hits)
			toks := tokens(41, 64*16)
			c.hold(t, "cell-a-pod1", toks, 32)
			cfg := DefaultConfig()
			cfg.HTTPAddr, cfg.GRPCAddr, cfg.ProbeTimeout, cfg.ProbeLone = "127.0.0.1:0", "127.0.0.1:0", 5*time.Second, probeLone
			probes := &countingProber{Prober: newGRPCProber(nil, nil)}
			g, err := New(cfg, StaticDirectory{c.view(t)}, probes, quiet)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- g.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done; probes.Prober.(*grpcProber).close() })

			resp, body := post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
			if resp.StatusCode != 200 || !strings.Contains(body, "from cell-a-pod1") {
				t.Fatalf("got %d %q, want cell-a-pod1", resp.StatusCode, body)
			}
			if got := resp.Header.Get(proxy.MatchedBlocksHeader); got != "32" {
				t.Errorf("%s = %q, want 32", proxy.MatchedBlocksHeader, got)
			}
			wantProbes, wantUnprobed := int64(0), "1"
			if probeLone {
				wantProbes, wantUnprobed = 1, "0"
			}
			if n := probes.n.Load(); n != wantProbes {
				t.Errorf("%d probes, want %d", n, wantProbes)
			}
			_, metrics := get(t, "http://"+g.HTTPAddr()+"/metrics")
			for _, want := range []string{"cellrouter_global_unprobed_handoffs_total " + wantUnprobed,
				fmt.Sprintf("cellrouter_global_predicted_cached_tokens_total %d", 32*16)} {
				if !strings.Contains(metrics, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
			d, err := g.Router().Decide(context.Background(), &Request{Model: "m", TokenIDs: toks})
			if err != nil || d.Unprobed || len(d.Answers) != 1 || d.Answers[0].Matched != 32 {
				t.Fatalf("dry run %+v, %v: want one probe matching 32 blocks", d, err)
			}
		})
	}
}
