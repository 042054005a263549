package events

import "strconv"

// holderID names the index holder of a pod's data-parallel rank: the pod
// itself for rank -1 (the engine did not say), "pod#rank" otherwise.
func holderID(pod string, rank int) string {
	if rank < 0 {
		return pod
	}
	return pod + "#" + strconv.Itoa(rank)
}

// podOf returns the configured pod a batch's publisher name stands for: the
// name itself when it is a configured id or unknown (a discovered pod), or
// the id of the configured pod whose address it is. Engines commonly name
// themselves by address (vLLM topics kv@<host:port>@<model>) while the
// configuration names pods by id; both must land on the same pod, the one
// requests are sent to.
func (a *Applier) podOf(name string) string {
	if id, ok := a.aliases[name]; ok {
		return id
	}
	return name
}

// PodID returns the configured pod a publisher name stands for (its id, or
// the id of the pod whose address it is) and true, or the name itself and
// false when no configured pod answers to it. It is safe for concurrent
// use.
func (a *Applier) PodID(name string) (string, bool) {
	id := a.podOf(name)
	return id, a.static[id]
}

// Admits reports whether ApplyBatch accepts batches a publisher name
// publishes: a configured pod's, or any pod's unless
// Config.RefuseUnknownPods. Transports ask before they spend state (a
// sequencer entry, a stream) on a publisher.
func (a *Applier) Admits(name string) bool {
	_, ok := a.PodID(name)
	return ok || !a.cfg.RefuseUnknownPods
}

// modelOf returns the model a batch of pod is hashed under: the pod's
// configured model when it has one (the operator's word wins: it is the name
// clients send), else the model the batch names, else Config.DefaultModel.
func (a *Applier) modelOf(pod, batchModel string) string {
	if m := a.podModel[pod]; m != "" {
		return m
	}
	if batchModel != "" {
		return batchModel
	}
	return a.cfg.DefaultModel
}

// podModels maps each configured pod that names a model to it.
func podModels(pods []PodSpec) map[string]string {
	m := make(map[string]string)
	for _, p := range pods {
		if p.Model != "" {
			m[p.ID] = p.Model
		}
	}
	return m
}

// podAliases maps configured pods' addresses to their ids, for publishers
// that name a pod by address. An address that is itself some pod's id, or
// that two pods share, is no alias: it would be ambiguous.
func podAliases(pods []PodSpec) map[string]string {
	ids := make(map[string]bool, len(pods))
	for _, p := range pods {
		ids[p.ID] = true
	}
	m := make(map[string]string)
	shared := make(map[string]bool)
	for _, p := range pods {
		if p.Address == "" || p.Address == p.ID || ids[p.Address] {
			continue
		}
		if _, dup := m[p.Address]; dup {
			shared[p.Address] = true
			continue
		}
		m[p.Address] = p.ID
	}
	for addr := range shared {
		delete(m, addr)
	}
	return m
}
