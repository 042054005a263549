package cell

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/lwepp/datastore"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/lwepp/handlers"

	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// lweppPods is the datastore lwepp (the Gateway API Inference Extension's
// reference picker, v1.6.0) picks from: the test's pods.
type lweppPods struct{ eps []*datastore.Endpoint }

func (d *lweppPods) PoolGet() (*datastore.EndpointPool, error) {
	return &datastore.EndpointPool{Namespace: "default"}, nil
}

func (d *lweppPods) PodList(pred func(*datastore.Endpoint) bool) []*datastore.Endpoint {
	var out []*datastore.Endpoint
	for _, e := range d.eps {
		if pred(e) {
			out = append(out, e)
		}
	}
	return out
}

// startLWEPP serves lwepp's ext_proc server in-process on 127.0.0.1:0 for
// pods and returns a client of it.
func startLWEPP(t *testing.T, pods []*fakePod) extprocv3.ExternalProcessorClient {
	t.Helper()
	ds := &lweppPods{}
	for _, p := range pods {
		host, port, _ := net.SplitHostPort(p.addr())
		ds.eps = append(ds.eps, &datastore.Endpoint{PodName: p.id, Address: host, Port: port})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(g, handlers.NewStreamingServer(ds))
	done := make(chan struct{})
	go func() { defer close(done); g.Serve(l) }()
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close(); g.Stop(); <-done })
	return extprocv3.NewExternalProcessorClient(cc)
}

// shape is what the protocol fixes of an answer, with the pick left out.
type shape struct {
	Immediate       int // the ImmediateResponse status, 0 when routed
	HeaderEqualsMD  bool
	ClearRouteCache bool
	EndpointsKnown  bool // every destination is a pod's ip:port
	BodyUnchanged   bool
	BodyEnded       bool
	Status          int
	ResponseWhole   bool
	Cancelled       bool
}

func shapeOf(o *epptest.Outcome, call epptest.Call, pods []*fakePod, upstream []byte) shape {
	s := shape{HeaderEqualsMD: o.Destination == o.MetadataDestination, ClearRouteCache: o.ClearRouteCache,
		BodyUnchanged: string(o.Forwarded) == string(call.Body), BodyEnded: o.ForwardedEnd || len(call.Body) == 0,
		Status: o.Status, Cancelled: o.Cancelled}
	if o.Immediate != nil {
		s.Immediate = int(o.Immediate.GetStatus().GetCode())
	}
	known := podAt(pods)
	s.EndpointsKnown = len(o.Destinations()) > 0
	for _, ep := range o.Destinations() {
		if known[ep] == "" {
			s.EndpointsKnown = false
		}
	}
	s.ResponseWhole = upstream == nil || strings.Contains(string(o.Response), string(upstream))
	return s
}

// TestEPPShapeMatchesLWEPP runs one gateway-side client against the cell's
// picker and against lwepp and checks that the answers have the same
// shape (the destination in header and metadata alike, a route cache
// cleared, endpoints of the pool, the body passed on whole, the response
// streamed back whole, the status), differing only in the pod picked.
func TestEPPShapeMatchesLWEPP(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a"), newFakePod(t, "b")}
	_, cellEPP := eppCell(t, pods, func(cfg *Config) {
		cfg.Routing.TokenizerJSON, cfg.Routing.ChatTemplate = fixtureTokenizer, "chatml"
	})
	lw := startLWEPP(t, pods)
	toks := promptTokens(90)
	comp, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 16})
	compStream, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 16, "stream": true})
	chat := []byte(`{"model":"m","messages":[{"role":"user","content":"Which pod takes this chat?"}],"stream":true}`)
	for _, tc := range []struct {
		name     string
		call     epptest.Call
		upstream string // a part of the pod's answer the client must get
	}{
		{"completion", epptest.Call{Method: "POST", Path: "/v1/completions", Body: comp, Frames: 4}, "hello from"},
		{"streamed completion", epptest.Call{Method: "POST", Path: "/v1/completions", Body: compStream, Frames: 2}, "data: [DONE]"},
		{"chat", epptest.Call{Method: "POST", Path: "/v1/chat/completions", Body: chat, Frames: 3}, "data: [DONE]"},
		{"models", epptest.Call{Method: "GET", Path: "/v1/models"}, `"object":"list"`},
		{"subset of one", epptest.Call{Method: "POST", Path: "/v1/completions", Body: comp, Frames: 2, Subset: []string{pods[1].addr()}}, "hello from b"},
		{"cancelled stream", epptest.Call{Method: "POST", Path: "/v1/completions", Body: compStream, CancelAfter: 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.call.CancelAfter > 0 {
				// The pods hold the stream open until the gateway goes
				// away, so that it is cancelled mid-stream for both.
				for _, p := range pods {
					p.mu.Lock()
					p.hold = true
					p.mu.Unlock()
				}
			}
			var shapes [2]shape
			var picks [2]string
			for i, client := range []extprocv3.ExternalProcessorClient{cellEPP, lw} {
				out, err := epptest.Do(context.Background(), client, tc.call)
				if err != nil {
					t.Fatalf("picker %d: %v", i, err)
				}
				var up []byte
				if tc.upstream != "" {
					up = []byte(tc.upstream)
				}
				shapes[i], picks[i] = shapeOf(out, tc.call, pods, up), out.Destinations()[0]
			}
			if shapes[0] != shapes[1] {
				t.Fatalf("shapes differ:\ncell  %+v\nlwepp %+v", shapes[0], shapes[1])
			}
			if s := shapes[0]; s.Cancelled != (tc.call.CancelAfter > 0) || s.Immediate != 0 || !s.HeaderEqualsMD || !s.ClearRouteCache || !s.EndpointsKnown || !s.BodyUnchanged || !s.BodyEnded || s.Status != http.StatusOK || !s.ResponseWhole {
				t.Fatalf("shape %+v is not a routed request's", s)
			}
			if tc.call.Subset != nil && (picks[0] != pods[1].addr() || picks[1] != pods[1].addr()) {
				t.Fatalf("subset of b: cell picked %s, lwepp %s", picks[0], picks[1])
			}
		})
	}
}

// TestEPPRefusalsWhereLWEPPFailsTheStream records where the reference
// picker departs from the protocol text and the cell follows it: a subset
// without an eligible endpoint is an ImmediateResponse 503 here, a failed
// stream (gRPC Internal) from lwepp, which a gateway turns into its
// failure_mode's answer.
func TestEPPRefusalsWhereLWEPPFailsTheStream(t *testing.T) {
	pods := []*fakePod{newFakePod(t, "a")}
	_, cellEPP := eppCell(t, pods, nil)
	lw := startLWEPP(t, pods)
	call := epptest.Call{Method: "POST", Path: "/v1/completions", Body: []byte(`{"model":"m","prompt":"x"}`), Subset: []string{"10.9.9.9:8000"}}
	out, err := epptest.Do(context.Background(), cellEPP, call)
	if err != nil || out.Immediate == nil || out.Immediate.GetStatus().GetCode() != 503 {
		t.Fatalf("cell: %v %v, want an immediate 503", out, err)
	}
	if _, err := epptest.Do(context.Background(), lw, call); err == nil {
		t.Fatalf("lwepp answered a subset without an endpoint; the recorded divergence is gone, update the README")
	}
}
