package global

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/internal/epp"
)

// depthEstimator is a summary that holds every chain up to a fixed depth.
type depthEstimator int

func (d depthEstimator) Depth(chain []blockhash.Hash) int { return min(int(d), len(chain)) }

// TestGlobalPickerDecidesAsTheDataPlane checks the global picker against a
// naive model over random fleets (cells with and without gateways, some
// draining, random summaries, loads and probe answers) and random subset
// hints: its endpoints are, in order, the gateways of the cells of the
// data plane's own decision (Router.decideToSend of a second router over
// the same state) that have one the hint allows, and 503 in OpenAI's shape
// when there is none; the load it notes goes to the cell it answers with
// first.
func TestGlobalPickerDecidesAsTheDataPlane(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			n := 2 + r.IntN(5)
			views := make([]CellView, n)
			answers := busyProber{}
			var gateways []string
			for i := range views {
				v := CellView{ID: fmt.Sprintf("cell-%d", i), HTTPAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2", Alive: true,
					Draining: r.IntN(8) == 0, Load: CellLoad{Pods: 4, ActiveBlocks: r.IntN(200), LeastPodBlocks: r.IntN(50)}}
				if r.IntN(3) > 0 {
					v.Summary = depthEstimator(r.IntN(30))
				}
				if r.IntN(10) < 7 {
					v.GatewayAddr = fmt.Sprintf("10.0.%d.1:8081", i)
					gateways = append(gateways, v.GatewayAddr)
				}
				answers[v.ID] = &cellv1.RouteResponse{Pick: &cellv1.Candidate{Pod: v.ID + "-p0",
					MatchedBlocks: uint32(r.IntN(30)), Load: float64(r.IntN(60))}, FailedOpen: r.IntN(6) == 0}
				views[i] = v
			}
			toks := make([]uint32, (5+r.IntN(30))*16)
			for i := range toks {
				toks[i] = uint32(seed*1000) + uint32(i)
			}
			body := completion(toks).Body
			oreq, err := openai.ParseRequest(openai.KindCompletion, body)
			if err != nil {
				t.Fatal(err)
			}
			req := &epp.Request{Method: "POST", Path: "/v1/completions", Header: http.Header{}, Body: body, Kind: openai.KindCompletion, OpenAI: oreq}
			if r.IntN(3) == 0 {
				req.HasSubset = true
				for _, g := range gateways {
					if r.IntN(2) == 0 {
						req.Subset = append(req.Subset, g)
					}
				}
				if r.IntN(2) == 0 {
					req.Subset = append(req.Subset, "10.9.9.9:1")
				}
			}
			cfg := DefaultConfig()
			cfg.HTTPAddr, cfg.GRPCAddr, cfg.Choose.RTTWeight = "127.0.0.1:0", "127.0.0.1:0", 0
			g, err := New(cfg, StaticDirectory(views), answers, quiet)
			if err != nil {
				t.Fatal(err)
			}
			defer g.closeListeners()
			ref, err := NewRouter(cfg, StaticDirectory(views), answers)
			if err != nil {
				t.Fatal(err)
			}

			// The model: the data plane's decision, its cells' gateways in
			// order, those the hint allows.
			d, derr := ref.decideToSend(context.Background(), &Request{Model: "m", TokenIDs: toks}, nil)
			var want []string
			if derr == nil {
				for _, i := range d.Order {
					if a := d.Views[i].GatewayAddr; a != "" && (!req.HasSubset || slices.Contains(req.Subset, a)) {
						want = append(want, a)
					}
				}
			}

			before := g.rt.views()
			res, err := gatewayPicker{g: g}.Pick(context.Background(), req)
			if len(want) == 0 {
				var e *epp.Error
				if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || len(e.Body) == 0 {
					t.Fatalf("got %v, %v; want a 503 answer (decision error %v)", res, err, derr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Pick: %v; want %v", err, want)
			}
			if !slices.Equal(res.Endpoints, want) {
				t.Fatalf("endpoints %v, want %v (order %v)", res.Endpoints, want, d.Order)
			}
			after := g.rt.views()
			for i := range after {
				if after[i].Load.ActiveRequests != before[i].Load.ActiveRequests && after[i].GatewayAddr != want[0] {
					t.Fatalf("the pick's load went to %s, want the cell of %s", after[i].ID, want[0])
				}
			}
		})
	}
}
