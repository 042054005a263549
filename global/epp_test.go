package global

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/internal/epp"
	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// standInGateway plays a cell's gateway (the InferencePool's Gateway that
// runs the cell as its picker) on a real socket: it forwards what reaches
// it to the cell's HTTP data plane, which picks the pod as the cell's
// picker would, and counts what it forwarded. It listens before the cell
// starts, so that the cell can advertise its address.
type standInGateway struct {
	addr   string
	target atomic.Pointer[url.URL]
	hits   atomic.Int64
}

func startStandInGateway(t *testing.T) *standInGateway {
	t.Helper()
	g := &standInGateway{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(g.target.Load()) }}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.hits.Add(1)
		rp.ServeHTTP(w, r)
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

// startGatewayCell starts a pool cell whose gateway is a stand-in.
func startGatewayCell(t *testing.T, id, seed string, hits *sync.Map) (*poolCell, *standInGateway) {
	t.Helper()
	gw := startStandInGateway(t)
	pc := startPoolReplicaWith(t, id, "r0", seed, hits, func(c *cell.Config) {
		c.Gossip.GatewayAddress = gw.addr
		c.Speculative.TTL = 0 // what the cell holds is what hold says
	})
	gw.target.Store(&url.URL{Scheme: "http", Host: pc.c.HTTPAddr()})
	return pc, gw
}

// eppClient dials a daemon's endpoint picker.
func eppClient(t *testing.T, d *Daemon) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(d.EPPAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// completion is the epptest call of a /v1/completions request for toks,
// cut into three frames.
func completion(toks []uint32) epptest.Call {
	b := []byte(`{"model":"m","max_tokens":1,"prompt":[`)
	for i, x := range toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(x), 10)
	}
	b = append(b, "]}"...)
	return epptest.Call{Method: "POST", Path: "/v1/completions", Header: http.Header{"Content-Type": {"application/json"}}, Body: b, Frames: 3}
}

// TestGlobalPickerRoutesThroughCellGateways runs a real globald with its
// endpoint picker, two real cells in its pool each behind a gateway, and
// the gateway's side of the protocol (epptest, on the go-control-plane
// types): the picker answers with the chosen cell's gateway then the other
// cell's, the request goes through that gateway to the cell and its pod,
// the response tells the client the cell, and a subset hint limits the
// answer (TestGlobalPickerDecidesAsTheDataPlane checks the choice itself
// against the data plane's over random fleets).
func TestGlobalPickerRoutesThroughCellGateways(t *testing.T) {
	hits := &sync.Map{}
	// Round trips under -race on a loaded machine are noise of hundreds of
	// milliseconds, which the choice would weigh; without them the choice
	// is the cost alone, and the same at both calls.
	d := startDaemonWith(t, func(c *Config) { c.EPPAddr, c.Choose.RTTWeight = "127.0.0.1:0", 0 })
	seed := d.GossipAddr()
	_, gwA := startGatewayCell(t, "cell-a", seed, hits)
	b, gwB := startGatewayCell(t, "cell-b", seed, hits)
	toks := tokens(11, 64*16)
	b.hold(t, "cell-b-pod0", toks, 40)
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

	// The cell holding the prefix is picked once its summary has it, and
	// the request crosses its gateway.
	var out *epptest.Outcome
	waitFor(t, "the picker to choose the holder", func() bool {
		var err error
		out, err = epptest.Do(context.Background(), client, completion(toks))
		return err == nil && out.Immediate == nil && len(out.Destinations()) > 0 && out.Destinations()[0] == gwB.addr
	})
	if got := out.Destinations(); len(got) != 2 || got[1] != gwA.addr || out.MetadataDestination != out.Destination {
		t.Fatalf("destinations %v (metadata %q), want cell-b's gateway then cell-a's, the same in both", got, out.MetadataDestination)
	}
	if out.Status != http.StatusOK || out.Served != gwB.addr || out.ResponseSetHeaders[strings.ToLower(CellHeader)] != "cell-b" {
		t.Fatalf("served %q status %d response headers %v, want cell-b's gateway, 200 and %s: cell-b", out.Served, out.Status, out.ResponseSetHeaders, CellHeader)
	}
	if gwB.hits.Load() == 0 || !strings.Contains(string(out.Response), "from cell-b-pod") {
		t.Fatalf("cell-b's gateway forwarded %d requests, response %q: want the request through it to a cell-b pod", gwB.hits.Load(), out.Response)
	}

	// A subset hint naming cell-a's gateway only: the picker answers with
	// it alone, and the request reaches a cell-a pod through it.
	call := completion(toks)
	call.Subset = []string{gwA.addr}
	out, err := epptest.Do(context.Background(), client, call)
	if err != nil || out.Immediate != nil {
		t.Fatalf("with a subset: %v, immediate %v", err, out.Immediate)
	}
	if got := out.Destinations(); len(got) != 1 || got[0] != gwA.addr || !strings.Contains(string(out.Response), "from cell-a-pod") {
		t.Fatalf("with a subset of cell-a's gateway: destinations %v, response %q", got, out.Response)
	}
	// A subset naming no cell's gateway: 503.
	call.Subset = []string{"127.0.0.1:1"}
	if out, err = epptest.Do(context.Background(), client, call); err != nil {
		t.Fatal(err)
	}
	if out.Immediate == nil || out.Immediate.GetStatus().GetCode() != http.StatusServiceUnavailable {
		t.Fatalf("with a subset of no gateway: got %+v, want a 503", out)
	}
}

// TestGlobalPickerWithoutGateways: a fleet whose cells advertise no
// gateway gets 503 in OpenAI's shape from the picker, while its health
// services say it is live and ready (a cell is usable: the data plane
// serves), and globald with no epp_addr serves no picker.
func TestGlobalPickerWithoutGateways(t *testing.T) {
	hits := &sync.Map{}
	d := startDaemonWith(t, func(c *Config) { c.EPPAddr = "127.0.0.1:0" })
	startPoolCell(t, "cell-c", d.GossipAddr(), hits)
	waitFor(t, "the cell", func() bool { return knows(d, "cell-c") })
	cc := eppClient(t, d)
	health := healthpb.NewHealthClient(cc)
	for _, svc := range []string{epp.LivenessService, epp.ReadinessService, epp.ExtProcService} {
		waitFor(t, svc+" serving", func() bool {
			r, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
			return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING
		})
	}
	out, err := epptest.Do(context.Background(), extprocv3.NewExternalProcessorClient(cc), completion(tokens(3, 64)))
	if err != nil {
		t.Fatal(err)
	}
	ir := out.Immediate
	if ir == nil || ir.GetStatus().GetCode() != http.StatusServiceUnavailable {
		t.Fatalf("got %+v, want a 503", out)
	}
	var body struct {
		Error struct {
			Message, Type string
			Code          *string
			Param         *string
		}
	}
	if err := json.Unmarshal(ir.GetBody(), &body); err != nil || body.Error.Message == "" || body.Error.Code == nil || *body.Error.Code != "no_cell_available" {
		t.Fatalf("body %s: want OpenAI's error shape with code no_cell_available (%v)", ir.GetBody(), err)
	}
	if !strings.Contains(string(ir.GetBody()), `"param":null`) {
		t.Fatalf("body %s: want a param", ir.GetBody())
	}
	if d2 := startDaemon(t); d2.EPPAddr() != "" {
		t.Fatalf("a globald without epp_addr serves a picker at %s", d2.EPPAddr())
	}
}
