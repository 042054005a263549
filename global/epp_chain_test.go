package global

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// pickingGateway plays a cell's gateway the way a Gateway API
// implementation does: for each request it asks the cell's own endpoint
// picker (celld epp_addr) over ext_proc and sends the request to the pod
// the cell picked itself (epptest), with no proxy of ours in between.
type pickingGateway struct {
	addr   string
	picker atomic.Pointer[extprocv3.ExternalProcessorClient]
	hits   atomic.Int64
}

func startPickingGateway(t *testing.T) *pickingGateway {
	t.Helper()
	g := &pickingGateway{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		out, err := epptest.Do(r.Context(), *g.picker.Load(), epptest.Call{Method: r.Method, Path: r.URL.Path, Header: r.Header, Body: body, Frames: 2})
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadGateway)
		case out.Immediate != nil:
			w.WriteHeader(int(out.Immediate.GetStatus().GetCode()))
			w.Write(out.Immediate.GetBody())
		default:
			for k, v := range out.ResponseSetHeaders {
				w.Header().Set(k, v)
			}
			w.WriteHeader(out.Status)
			w.Write(out.Response)
		}
	})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.addr = lis.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return g
}

// startPickerCell starts a pool cell that serves its endpoint picker,
// behind a picking gateway it advertises.
func startPickerCell(t *testing.T, id, seed string, hits *sync.Map) (*poolCell, *pickingGateway) {
	t.Helper()
	gw := startPickingGateway(t)
	pc := startPoolReplicaWith(t, id, "r0", seed, hits, func(c *cell.Config) {
		c.EPPAddr, c.Gossip.GatewayAddress = "127.0.0.1:0", gw.addr
		c.Speculative.TTL = 0
	})
	cc, err := grpc.NewClient(pc.c.EPPAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	client := extprocv3.NewExternalProcessorClient(cc)
	gw.picker.Store(&client)
	return pc, gw
}

// TestTwoPickers runs the path the issue asks for: a global gateway asks
// globald's picker, which names a cell's gateway; that gateway asks the
// cell's picker, which names a pod; the request crosses the two gateways
// to the pod, and no proxy of ours carries it (the cell's gateway knows
// only the cell's picker, not its HTTP data plane). The cell holding the
// prefix gets it, on the pod that holds it.
func TestTwoPickers(t *testing.T) {
	hits := &sync.Map{}
	d := startDaemonWith(t, func(c *Config) { c.EPPAddr, c.Choose.RTTWeight = "127.0.0.1:0", 0 })
	seed := d.GossipAddr()
	startPickerCell(t, "cell-a", seed, hits)
	b, gwB := startPickerCell(t, "cell-b", seed, hits)
	toks := tokens(12, 64*16)
	b.hold(t, "cell-b-pod1", toks, 40)
	waitFor(t, "both cells' gateways", func() bool {
		n := 0
		for _, v := range d.Router().views() {
			if v.Alive && v.Summary != nil && v.GatewayAddr != "" {
				n++
			}
		}
		return n == 2
	})
	client := extprocv3.NewExternalProcessorClient(eppClient(t, d))
	var out *epptest.Outcome
	waitFor(t, "the request to reach the holding pod through both pickers", func() bool {
		var err error
		out, err = epptest.Do(context.Background(), client, completion(toks))
		return err == nil && out.Immediate == nil && out.Status == http.StatusOK && strings.Contains(string(out.Response), "from cell-b-pod1")
	})
	if out.Served != gwB.addr || out.ResponseSetHeaders[strings.ToLower(CellHeader)] != "cell-b" || gwB.hits.Load() == 0 {
		t.Fatalf("served by %q (cell header %q, cell-b's gateway hit %d times), want cell-b's gateway", out.Served,
			out.ResponseSetHeaders[strings.ToLower(CellHeader)], gwB.hits.Load())
	}
}
