package discovery

import (
	"errors"
	"strings"
	"testing"
)

func TestKubernetesConfigValidate(t *testing.T) {
	ok := DefaultKubernetesConfig()
	ok.Enabled, ok.Selector = true, "app=vllm"
	if err := ok.Validate(); err != nil {
		t.Fatalf("got %v for a valid config", err)
	}
	if err := DefaultKubernetesConfig().Validate(); err != nil {
		t.Fatalf("got %v for the disabled default", err)
	}
	cases := []struct {
		name, field string
		mod         func(*KubernetesConfig)
	}{
		{"neither", "selector", func(c *KubernetesConfig) { c.Selector = "" }},
		{"both", "inference_pool", func(c *KubernetesConfig) { c.InferencePool = "pool" }},
		{"bad selector", "selector", func(c *KubernetesConfig) { c.Selector = "app in (" }},
		{"bad pool", "inference_pool", func(c *KubernetesConfig) { c.Selector, c.InferencePool = "", "ns/pool" }},
		{"port", "target_port", func(c *KubernetesConfig) { c.TargetPort = 0 }},
		{"zmq", "zmq_port", func(c *KubernetesConfig) { c.ZMQPort = 70000 }},
		{"replay without zmq", "replay_port", func(c *KubernetesConfig) { c.ZMQPort = 0 }},
		{"resync", "resync", func(c *KubernetesConfig) { c.Resync = -1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			err := c.Validate()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "discovery.kubernetes."+tc.field) {
				t.Errorf("got %v, want an ErrConfig naming discovery.kubernetes.%s", err, tc.field)
			}
		})
	}
}
