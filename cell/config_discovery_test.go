package cell

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDiscoveryConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
discovery:
  kubernetes:
    enabled: true
    kubeconfig: /tmp/kubeconfig
    namespace: llm
    inference_pool: llama
    zmq_port: 0
    replay_port: 0
    resync: 1m
`))
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Discovery.Kubernetes
	if !k.Enabled || k.InferencePool != "llama" || k.TargetPort != 8000 || k.ZMQPort != 0 || k.Resync != time.Minute {
		t.Errorf("got %+v, want the pool, the default target port, no zmq port, 1m resync", k)
	}
	if got := cfg.discoveryCapacity(); got != 256 {
		t.Errorf("got capacity %d, want 256", got)
	}
	for _, tc := range []struct{ yaml, field string }{
		{"discovery: {kubernetes: {enabled: true}}", "discovery.kubernetes.selector"},
		{"discovery: {kubernetes: {enabled: true, selector: 'a=b', target_port: 0}}", "discovery.kubernetes.target_port"},
		{"discovery: {kubernetes: {enabled: true, selector: 'a=b', zmq_port: 0}}", "discovery.kubernetes.replay_port"},
	} {
		_, err := ParseConfig([]byte(tc.yaml))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want an ErrConfig naming %s", tc.yaml, err, tc.field)
		}
	}
	// Static pods that take every holder leave discovery no room.
	full := DefaultConfig()
	for i := range 256 {
		full.Pods = append(full.Pods, PodConfig{ID: fmt.Sprint("p", i), Address: "127.0.0.1:1"})
	}
	full.Discovery.Kubernetes.Enabled, full.Discovery.Kubernetes.Selector = true, "a=b"
	if err := full.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "discovery.kubernetes.enabled") {
		t.Errorf("got %v, want an ErrConfig naming discovery.kubernetes.enabled", err)
	}
}
