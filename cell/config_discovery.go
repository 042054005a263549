package cell

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cell/discovery"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/podset"
)

// DiscoveryConfig is the discovery section: sources of pods besides the
// static pods list (run_discovery.go).
type DiscoveryConfig struct {
	// Kubernetes follows engine Pods through the Kubernetes API (package
	// cell/discovery; the README's "Following a Kubernetes fleet").
	Kubernetes discovery.KubernetesConfig `yaml:"kubernetes"`
}

func defaultDiscovery() DiscoveryConfig {
	return DiscoveryConfig{Kubernetes: discovery.DefaultKubernetesConfig()}
}

// validateDiscovery checks the discovery section, and that the static pods
// leave discovery room under the index's holder cap.
func (c Config) validateDiscovery() error {
	if err := c.Discovery.Kubernetes.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if c.Discovery.Kubernetes.Enabled && c.discoveryCapacity() <= 0 {
		return fmt.Errorf("%w: discovery.kubernetes.enabled = true: the %d static pods take every one of the index's %d holders",
			ErrConfig, len(c.Pods), index.MaxPods)
	}
	return nil
}

// discoveryCapacity is the number of index holders discovered pods may
// take: the index's cap less the static pods' holders (one per rank).
func (c Config) discoveryCapacity() int {
	n := index.MaxPods
	for _, p := range c.Pods {
		n -= max(1, p.DataParallelSize)
	}
	return n
}

// podOf is a static pod as the pod set holds it.
func podOf(p PodConfig) podset.Pod {
	return podset.Pod{ID: p.ID, Address: p.Address, Role: p.Role, ZMQEndpoint: p.ZMQEndpoint, ReplayEndpoint: p.ReplayEndpoint,
		KVBlocks: p.KVBlocks, Model: p.Model, DataParallelSize: p.DataParallelSize, Events: p.Events, Routable: true}
}

// configOf is a pod of the pod set as a pod entry of the configuration.
func configOf(p podset.Pod) PodConfig {
	return PodConfig{ID: p.ID, Address: p.Address, Role: p.Role, ZMQEndpoint: p.ZMQEndpoint, ReplayEndpoint: p.ReplayEndpoint,
		KVBlocks: p.KVBlocks, Model: p.Model, DataParallelSize: p.DataParallelSize, Events: p.Events}
}

// staticPods are the configured pods as the pod set's static source.
func (c Config) staticPods() []podset.Pod {
	out := make([]podset.Pod, len(c.Pods))
	for i, p := range c.Pods {
		out[i] = podOf(p)
	}
	return out
}
