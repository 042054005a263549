package global

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/epp"
	"github.com/cellrouter/cellrouter/internal/proxy"
)

// gatewayPicker is the global tier as an endpoint picker (Config.EPPAddr):
// for a global gateway it decides exactly as the data plane does (the same
// parsing, refusals, tenant salt, search, probes and choice:
// Router.decideToSend) and answers with the chosen cell's gateway, then the
// gateways of the next cells of the decision's order, instead of handing
// the request off itself. The request then crosses the global gateway, the
// cell's gateway and the pod, with no proxy of ours in its path.
type gatewayPicker struct{ g *Global }

var _ epp.Picker = gatewayPicker{}

// errNoGateway is a decision none of whose cells advertises a gateway
// (gossip.gateway_address) the subset hint allows; answered 503.
var errNoGateway = errors.New("global: no cell with a gateway can take the request")

// Pick implements epp.Picker.
func (p gatewayPicker) Pick(ctx context.Context, req *epp.Request) (*epp.Result, error) {
	g := p.g
	if req.OpenAI == nil {
		// Not an inference request (GET /v1/models): any usable cell's
		// gateway answers it, in turn.
		eps := g.anyGateways(req)
		if len(eps) == 0 {
			return nil, noGatewayAnswer()
		}
		return &epp.Result{Endpoints: eps, Exchange: &cellExchange{g: g, cells: nil}}, nil
	}
	oreq, body := req.OpenAI, req.Body
	if e := epp.Answer(func(w http.ResponseWriter) { g.refuseUnservedModel(w, oreq.Model) }); e.Body != nil {
		return nil, e
	}
	if err := g.cfg.Prompts.For(oreq.Model).CheckText(oreq); err != nil {
		return nil, epp.Answer(func(w http.ResponseWriter) { g.refusePrompt(w, err) })
	}
	salted, err := edge.Salt(ctx, body, oreq)
	if err != nil {
		return nil, epp.Answer(func(w http.ResponseWriter) { edge.WriteHTTP(w, err) })
	}
	res := &epp.Result{Header: http.Header{}, Remove: []string{edge.TenantHeader}}
	if p, _ := edge.PrincipalFrom(ctx); p.Tenant != nil {
		res.Header.Set(edge.TenantHeader, p.Tenant.Name)
		res.Remove = nil
	}
	if string(salted) != string(body) {
		res.Body = salted
	}
	// The band is decided here as on the data plane (the key's tenant's,
	// lowered by the client's header) and sent on to the cell; a sheddable
	// request is refused before the hop when every cell is saturated.
	pr, _ := edge.PrincipalFrom(ctx)
	band, err := pr.RequestPriority(req.Header.Get(auth.PriorityHeader))
	if err != nil {
		return nil, epp.Answer(func(w http.ResponseWriter) { edge.WriteHTTP(w, err) })
	}
	if e := epp.Answer(func(w http.ResponseWriter) { g.shed(w, band, time.Now()) }); e.Body != nil {
		return nil, e
	}
	res.Header.Set(auth.PriorityHeader, band.String())
	r := requestOf(req.Kind, oreq)
	r.Band = gossip.BandOf(band)
	d, err := g.rt.decideToSend(ctx, r, nil)
	path := "cold_" + r.Kind().String()
	if d != nil {
		path = routePath(d)
		g.m.observeTokenize(d)
	}
	if errors.Is(err, openai.ErrPromptTooLong) {
		return nil, epp.Answer(func(w http.ResponseWriter) { g.refusePrompt(w, err) })
	}
	if err != nil {
		g.m.requests.WithLabelValues(path, "no_cell").Inc()
		return nil, epp.Answer(func(w http.ResponseWriter) {
			openai.WriteErrorBody(w, http.StatusServiceUnavailable, openai.NewErrorBody(openai.TypeServer,
				"no cell is available to serve the request", "", "no_cell_available"))
		})
	}
	eps, cells := gatewayTargets(d, g.turn.Add(1), req)
	if len(eps) == 0 {
		g.m.requests.WithLabelValues(path, "no_gateway").Inc()
		return nil, noGatewayAnswer()
	}
	g.m.decisionTime.Observe(d.Took.Seconds())
	g.m.probes.Observe(float64(len(d.Answers)))
	g.m.candidates.Observe(float64(len(d.Candidates)))
	g.m.requests.WithLabelValues(path, "picked").Inc()
	g.rt.noteRouted(d)
	res.Endpoints, res.Exchange = eps, &cellExchange{g: g, cells: cells}
	return res, nil
}

// noGatewayAnswer is the 503 of a decision without a gateway to send to.
func noGatewayAnswer() *epp.Error {
	return epp.Answer(func(w http.ResponseWriter) {
		openai.WriteErrorBody(w, http.StatusServiceUnavailable, openai.NewErrorBody(openai.TypeServer,
			"no cell with a gateway is available to serve the request", "", "no_cell_available"))
	})
}

// gatewayTargets lists the gateways of a decision's cells in its order,
// each cell's replicas' distinct gateways in turn (round robin by turn, as
// handoffTargets takes the replicas), leaving out cells without a gateway
// and gateways the subset hint excludes. It moves the first cell with a
// gateway to the front of d.Order, so that noteRouted charges the cell
// that takes the request (and clears d.Unprobed when that is not the
// lone candidate the flag speaks of). cells maps each endpoint to its
// cell.
func gatewayTargets(d *Decision, turn uint64, req *epp.Request) (eps []string, cells map[string]string) {
	cells = map[string]string{}
	first := -1
	for k, i := range d.Order {
		v := &d.Views[i]
		for _, ep := range v.rotated(turn) {
			a := ep.GatewayAddr
			if a == "" || !req.InSubset(a) {
				continue
			}
			if _, dup := cells[a]; dup {
				continue
			}
			cells[a] = v.ID
			eps = append(eps, a)
			if first < 0 {
				first = k
			}
		}
	}
	if first > 0 {
		c := d.Order[first]
		d.Order = append([]int{c}, slices.Delete(slices.Clone(d.Order), first, first+1)...)
		d.Unprobed = false
	}
	return eps, cells
}

// anyGateways are the gateways of every usable cell, one replica each in
// turn and its siblings, for a request that is not routed by its prompt.
func (g *Global) anyGateways(req *epp.Request) []string {
	var eps []string
	seen := map[string]bool{}
	turn := g.turn.Add(1)
	for _, v := range g.rt.views() {
		if !v.usable() {
			continue
		}
		for _, ep := range v.rotated(turn) {
			if a := ep.GatewayAddr; a != "" && !seen[a] && req.InSubset(a) {
				seen[a] = true
				eps = append(eps, a)
			}
		}
	}
	return eps
}

// cellExchange follows a picked request's response: it tells the client
// which cell served (X-Cellrouter-Cell, as the hand-off does) and counts
// the outcome as a hand-off.
type cellExchange struct {
	g      *Global
	cells  map[string]string // gateway endpoint -> cell id
	status int
}

// Served implements epp.Exchange.
func (x *cellExchange) Served(endpoint string, status int) http.Header {
	x.status = status
	if c, ok := x.cells[endpoint]; ok {
		return http.Header{CellHeader: {c}}
	}
	return nil
}

// Body implements epp.Exchange.
func (x *cellExchange) Body([]byte) {}

// Finish implements epp.Exchange.
func (x *cellExchange) Finish(complete bool) {
	class := "cancelled"
	if complete {
		class = proxy.StatusClass(x.status)
	}
	x.g.eppm.exchanges.WithLabelValues(class).Inc()
}
