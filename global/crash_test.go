package global

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/gossip"
)

// TestCrashedCellUnderLoad crashes a cell while requests flow: its data
// plane stops answering and its gossip node dies without a leave. Clients
// see no error (hand-offs retry on the next cell before any byte) and the
// cell leaves the candidate set once failure detection declares it dead.
func TestCrashedCellUnderLoad(t *testing.T) {
	hits := &sync.Map{}
	d := startDaemon(t)
	seed := d.GossipAddr()
	healthy := startPoolCell(t, "cell-ok", seed, hits)

	// The crashing cell: an OpenAI data plane and a gossip node that
	// publishes a summary holding the test prompts' prefix, so the global
	// tier prefers it.
	toks := tokens(31, 32*16)
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		fmt.Fprint(w, `{"choices":[{"text":"from crash"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	// Its probe answers: it holds the prompt's whole prefix.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	cellv1.RegisterCellServiceServer(gs, fakeRoute{matched: 32})
	go gs.Serve(lis)
	defer gs.Stop()
	gc := gossip.DefaultConfig()
	gc.NodeName, gc.BindAddr, gc.BindPort = "cell/cell-crash", "127.0.0.1", 0
	gc.Role, gc.CellID = gossip.RoleCell, "cell-crash"
	gc.HTTPAddr, gc.GRPCAddr = strings.TrimPrefix(srv.URL, "http://"), lis.Addr().String()
	gc.ProbeInterval, gc.ProbeTimeout, gc.Seeds = 100*time.Millisecond, 50*time.Millisecond, []string{seed}
	node, err := gossip.Start(gc, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range blockhash.DefaultHasher().Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil) {
		b.Add(h, i+1)
	}
	if _, err := node.Publish(b.Build(), gossip.Load{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both cells known", func() bool { return knows(d, "cell-ok", "cell-crash") })
	url := "http://" + d.HTTPAddr() + "/v1/completions"
	waitFor(t, "the crashing cell to be chosen", func() bool {
		resp, _ := post(t, url, map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
		return resp.Header.Get(CellHeader) == "cell-crash"
	})

	var stop atomic.Bool
	var errs, total atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				resp, _ := post(t, url, map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
				total.Add(1)
				if resp.StatusCode != 200 {
					errs.Add(1)
				}
			}
		}()
	}
	waitFor(t, "load on the crashing cell", func() bool { return served.Load() > 5 })
	srv.CloseClientConnections()
	srv.Close() // the data plane is gone: connections refused
	gs.Stop()   // and so are its probes
	node.Kill() // no leave: only failure detection can tell
	waitFor(t, "the crashed cell to leave the candidate set", func() bool {
		for _, v := range d.Router().Cells() {
			if v.ID == "cell-crash" && v.usable() {
				return false
			}
		}
		return true
	})
	before := total.Load()
	waitFor(t, "requests after the crash", func() bool { return total.Load() > before+5 })
	stop.Store(true)
	wg.Wait()
	if n := errs.Load(); n != 0 {
		t.Fatalf("%d of %d requests failed around the crash", n, total.Load())
	}
	_ = healthy
}

// fakeRoute answers probes with a pick that matches a fixed depth.
type fakeRoute struct {
	cellv1.UnimplementedCellServiceServer
	matched uint32
}

func (f fakeRoute) Route(context.Context, *cellv1.RouteRequest) (*cellv1.RouteResponse, error) {
	return &cellv1.RouteResponse{Pick: &cellv1.Candidate{Pod: "crash-pod", MatchedBlocks: f.matched}}, nil
}
