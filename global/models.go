package global

import (
	"net/http"

	"github.com/cellrouter/cellrouter/api/openai"
)

// ModelSet says which models a cell serves (gossip.ModelSet).
type ModelSet interface {
	Has(model string) bool
}

// ModelServed reports whether some usable cell may serve model, from the
// models the cells advertise: false only when every usable cell lists all
// its models and none lists this one. A request naming no model, and any
// request while no cell is usable (which gets its own answer), counts as
// served.
func (rt *Router) ModelServed(model string) bool {
	if model == "" {
		return true
	}
	views := rt.views()
	usable := 0
	for i := range views {
		v := &views[i]
		if !v.usable() {
			continue
		}
		usable++
		if v.Models == nil || v.Models.Has(model) {
			return true
		}
	}
	return usable == 0
}

// refuseUnservedModel answers 404 model_not_found, as OpenAI does, for a
// request of a model no cell serves, decided here without a probe or a
// call to any pod; it reports whether it answered.
func (g *Global) refuseUnservedModel(w http.ResponseWriter, model string) bool {
	if g.rt.ModelServed(model) {
		return false
	}
	g.m.requests.WithLabelValues("unrouted", "model_not_found").Inc()
	openai.WriteModelNotFound(w, model)
	return true
}
