package discovery

import (
	"encoding/json"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

func poolObject(t testing.TB, spec string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(`{"apiVersion":"inference.networking.k8s.io/v1","kind":"InferencePool","metadata":{"name":"pool"},"spec":`+spec+`}`), &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestParsePool(t *testing.T) {
	cases := []struct {
		name, spec string
		port       int
		ok         bool
	}{
		{"first port", `{"selector":{"matchLabels":{"app":"vllm"}},"targetPorts":[{"number":8000},{"number":8001}],"endpointPickerRef":{"name":"epp"}}`, 8000, true},
		{"no labels", `{"selector":{"matchLabels":{}},"targetPorts":[{"number":8000}]}`, 0, false},
		{"no selector", `{"targetPorts":[{"number":8000}]}`, 0, false},
		{"no ports", `{"selector":{"matchLabels":{"app":"vllm"}},"targetPorts":[]}`, 0, false},
		{"port out of range", `{"selector":{"matchLabels":{"app":"vllm"}},"targetPorts":[{"number":70000}]}`, 0, false},
		{"port not a number", `{"selector":{"matchLabels":{"app":"vllm"}},"targetPorts":[{"number":"x"}]}`, 0, false},
		{"bad label value", `{"selector":{"matchLabels":{"app":"a b"}},"targetPorts":[{"number":8000}]}`, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePool(poolObject(t, tc.spec))
			if tc.ok != (err == nil) {
				t.Fatalf("got err %v, want ok %v", err, tc.ok)
			}
			if err != nil {
				if !errors.Is(err, ErrPool) {
					t.Errorf("got %v, want it to wrap ErrPool", err)
				}
				return
			}
			if got.TargetPort != tc.port || !got.Selector.Matches(labels.Set{"app": "vllm"}) || got.Selector.Matches(labels.Set{"app": "x"}) {
				t.Errorf("got %+v, want port %d selecting app=vllm", got, tc.port)
			}
		})
	}
}

// FuzzParsePool feeds arbitrary pool specs (an object anyone with write
// access to the namespace controls): ParsePool never panics, and a pool it
// accepts has a port in range and a selector that selects something.
func FuzzParsePool(f *testing.F) {
	f.Add(`{"selector":{"matchLabels":{"app":"vllm"}},"targetPorts":[{"number":8000}]}`)
	f.Add(`{"selector":{"matchLabels":{"":""}},"targetPorts":[{"number":-1}]}`)
	f.Add(`{"selector":null,"targetPorts":[1,2]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, spec string) {
		var obj map[string]any
		if err := json.Unmarshal([]byte(`{"metadata":{"name":"p"},"spec":`+spec+`}`), &obj); err != nil {
			return
		}
		got, err := ParsePool(&unstructured.Unstructured{Object: obj})
		if err != nil {
			return
		}
		if got.TargetPort < 1 || got.TargetPort > 65535 || got.Selector.Empty() {
			t.Errorf("accepted %s as %+v", spec, got)
		}
	})
}
