package cell

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/internal/proxy"
)

// defaultModelsInterval is how often the pods' model lists are read when
// health checks are off.
const defaultModelsInterval = 5 * time.Second

// podModels are the models each pod serves, as its GET /v1/models last
// answered (the served model and its LoRA adapters). The cell serves a
// model when one of its live pods does; it knows what it serves only when
// every live pod answered, so that an adapter on a pod that could not be
// asked is never refused.
type podModels struct {
	mu    sync.Mutex
	byPod map[string][]string // pod id -> its models
}

func newPodModels() *podModels { return &podModels{byPod: map[string][]string{}} }

// set records pod's models; nil forgets them (the pod did not answer).
func (m *podModels) set(pod string, models []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if models == nil {
		delete(m.byPod, pod)
		return
	}
	m.byPod[pod] = models
}

// served returns the models of the live pods and whether every live pod's
// list is known (none known when no pod is live).
func (m *podModels) served(live []string) (known bool, models []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	known = len(live) > 0
	for _, p := range live {
		ms, ok := m.byPod[p]
		if !ok {
			known = false
		}
		models = append(models, ms...)
	}
	slices.Sort(models)
	return known, slices.Compact(models)
}

// livePods are the pods that may take requests: alive, routable in the
// pod set, not draining, with an address. (It reads the registry, not the
// router's candidate cache, which it would otherwise fill early.)
func (c *Cell) livePods() []proxy.Target {
	var out []proxy.Target
	view := c.pods.Load()
	for _, p := range c.reg.Snapshot() {
		if p.Address != "" && p.State != events.StateDead && !c.state.Draining(p.ID) && view.Routable(p.ID) {
			out = append(out, proxy.Target{Pod: p.ID, Address: p.Address})
		}
	}
	return out
}

// servedModels returns what the cell serves now (see podModels.served).
func (c *Cell) servedModels() (known bool, models []string) {
	live := c.livePods()
	ids := make([]string, len(live))
	for i, t := range live {
		ids[i] = t.Pod
	}
	return c.models.served(ids)
}

// modelServed reports whether a request for model may be served: always
// when the cell does not know all its models, or the request names none.
func (c *Cell) modelServed(model string) bool {
	if model == "" {
		return true
	}
	known, models := c.servedModels()
	_, found := slices.BinarySearch(models, model)
	return !known || found
}

// modelsLoop reads every live pod's model list each health interval (or
// defaultModelsInterval) until ctx ends.
func (c *Cell) modelsLoop(ctx context.Context) {
	interval := c.cfg.HealthInterval
	if interval <= 0 {
		interval = defaultModelsInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		var wg sync.WaitGroup
		for _, p := range c.livePods() {
			wg.Add(1)
			go func(p proxy.Target) {
				defer wg.Done()
				pctx, cancel := context.WithTimeout(ctx, c.cfg.HealthTimeout)
				defer cancel()
				list, err := c.proxy.Models(pctx, p)
				if err != nil {
					c.models.set(p.Pod, nil)
					return
				}
				names := make([]string, 0, len(list.Data))
				for _, m := range list.Data {
					names = append(names, m.ID)
				}
				c.models.set(p.Pod, names)
			}(p)
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
