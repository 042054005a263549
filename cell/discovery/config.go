package discovery

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// ErrConfig is wrapped by every configuration error of the package.
var ErrConfig = errors.New("discovery: invalid config")

// KubernetesConfig is the cell's discovery.kubernetes section: engine Pods
// found through the Kubernetes API.
type KubernetesConfig struct {
	// Enabled turns Kubernetes discovery on.
	Enabled bool `yaml:"enabled"`
	// Kubeconfig is a kubeconfig path for runs outside the cluster (and
	// tests); "" uses the in-cluster configuration (the pod's service
	// account).
	Kubeconfig string `yaml:"kubeconfig"`
	// Namespace is where the engine Pods are; "" is the cell's own
	// namespace (POD_NAMESPACE, else the service account's namespace file).
	Namespace string `yaml:"namespace"`
	// Selector is the label selector of the engine Pods ("app=vllm");
	// exclusive with InferencePool.
	Selector string `yaml:"selector"`
	// InferencePool names an InferencePool (inference.networking.k8s.io/v1)
	// in Namespace: its spec.selector.matchLabels selects the Pods and its
	// first targetPort is their HTTP port. Exclusive with Selector.
	InferencePool string `yaml:"inference_pool"`
	// TargetPort is the engines' HTTP port when Selector is used.
	TargetPort int `yaml:"target_port"`
	// ZMQPort is the KV event PUB port on the pod IP; 0 means the pods
	// publish no events (events none) unless an annotation names an
	// endpoint.
	ZMQPort int `yaml:"zmq_port"`
	// ReplayPort is the replay ROUTER port on the pod IP; 0 means none.
	ReplayPort int `yaml:"replay_port"`
	// DefaultModel is the model of a pod that names none; "" leaves it to
	// the cell's events.default_model.
	DefaultModel string `yaml:"default_model"`
	// Resync is the informers' resync period: how often every cached Pod
	// is handed to the cell again, on top of the watch.
	Resync time.Duration `yaml:"resync"`
}

// DefaultKubernetesConfig returns the defaults: off, in-cluster, port 8000
// for HTTP, 5557 and 5558 for events and replay, a 10-minute resync.
func DefaultKubernetesConfig() KubernetesConfig {
	return KubernetesConfig{TargetPort: 8000, ZMQPort: 5557, ReplayPort: 5558, Resync: 10 * time.Minute}
}

// Validate reports the first invalid field with its value (keys as in the
// cell's YAML, under discovery.kubernetes).
func (c KubernetesConfig) Validate() error {
	if !c.Enabled {
		return nil
	}
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: discovery.kubernetes.%s = %v: %s", ErrConfig, field, v, why)
	}
	switch {
	case c.Selector == "" && c.InferencePool == "":
		return bad("selector", `""`, "set selector or inference_pool")
	case c.Selector != "" && c.InferencePool != "":
		return bad("inference_pool", fmt.Sprintf("%q", c.InferencePool), "selector and inference_pool are exclusive")
	}
	if c.Selector != "" {
		if _, err := labels.Parse(c.Selector); err != nil {
			return bad("selector", fmt.Sprintf("%q", c.Selector), err.Error())
		}
	}
	if c.InferencePool != "" && strings.ContainsAny(c.InferencePool, "/ ") {
		return bad("inference_pool", fmt.Sprintf("%q", c.InferencePool), "want a name (the pool lives in namespace)")
	}
	for _, p := range []struct {
		field string
		v     int
		zero  bool
	}{{"target_port", c.TargetPort, false}, {"zmq_port", c.ZMQPort, true}, {"replay_port", c.ReplayPort, true}} {
		if p.v < 0 || p.v > 65535 || (p.v == 0 && !p.zero) {
			return bad(p.field, p.v, "want a port in 1..65535"+map[bool]string{true: " or 0 (none)"}[p.zero])
		}
	}
	if c.ReplayPort != 0 && c.ZMQPort == 0 {
		return bad("replay_port", c.ReplayPort, "needs zmq_port")
	}
	if c.Resync < 0 {
		return bad("resync", c.Resync, "must not be negative")
	}
	return nil
}
