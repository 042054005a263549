package cell

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/load"
)

// podCapacity is one pod's part in its models' saturation: the models it
// serves, its KV cache size in router blocks and the blocks its requests
// in flight occupy.
type podCapacity struct {
	models         []string
	capacity, used int
}

// saturationByModel is, per model, the blocks the requests in flight
// occupy on the pods serving it over those pods' KV cache sizes. Pods of
// unknown size (kv_blocks 0) count for neither, and a model none of whose
// pods has a known size has no value: a ratio of nothing would read as
// idle. The ratio may pass 1 when the cell routes past its pods' caches
// (the engines then queue or preempt).
func saturationByModel(pods []podCapacity) map[string]float64 {
	capacity, used := map[string]int{}, map[string]int{}
	for _, p := range pods {
		if p.capacity <= 0 {
			continue
		}
		for _, m := range p.models {
			capacity[m] += p.capacity
			used[m] += p.used
		}
	}
	out := make(map[string]float64, len(capacity))
	for m, c := range capacity {
		out[m] = float64(used[m]) / float64(c)
	}
	return out
}

// saturationPods lists the pods that take requests (alive and not
// draining) with their models and load. A pod's models are those its
// GET /v1/models last answered, else its configured model, else
// events.default_model.
func (c *Cell) saturationPods() []podCapacity {
	used := map[string]int{}
	c.router.tracker.Snapshot(func(pod string, u *load.Usage) { used[pod] = u.Blocks })
	c.models.mu.Lock()
	byPod := make(map[string][]string, len(c.models.byPod))
	for p, ms := range c.models.byPod {
		byPod[p] = slices.Clone(ms)
	}
	c.models.mu.Unlock()
	var out []podCapacity
	for _, p := range c.reg.Snapshot() {
		if p.State == events.StateDead || c.state.Draining(p.ID) {
			continue
		}
		pc := c.router.podConfig(p.ID)
		models := byPod[p.ID]
		if len(models) == 0 {
			m := pc.Model
			if m == "" {
				m = c.cfg.Events.DefaultModel
			}
			if m == "" {
				continue
			}
			models = []string{m}
		}
		out = append(out, podCapacity{models: models, capacity: pc.KVBlocks, used: used[p.ID]})
	}
	return out
}

// saturationCollector exports cellrouter_cell_saturation{cell,model}, the
// gauge an autoscaler (a KEDA ScaledObject's Prometheus trigger, an HPA
// external metric) targets to add pods for a model before its caches
// fill.
type saturationCollector struct {
	desc *prometheus.Desc
	pods func() []podCapacity
}

func newSaturationCollector(cellID string, pods func() []podCapacity) *saturationCollector {
	return &saturationCollector{pods: pods, desc: prometheus.NewDesc("cellrouter_cell_saturation",
		"KV blocks the requests in flight occupy on the live, undrained pods serving each model, over those pods' kv_blocks "+
			"(pods of unknown kv_blocks left out); above 1 the engines queue.",
		[]string{"model"}, prometheus.Labels{"cell": cellID})}
}

func (s *saturationCollector) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *saturationCollector) Collect(ch chan<- prometheus.Metric) {
	for m, v := range saturationByModel(s.pods()) {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, v, m)
	}
}
