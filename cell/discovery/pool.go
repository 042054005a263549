package discovery

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// InferencePoolGVR is the resource of the Gateway API Inference
// Extension's InferencePool, read with a dynamic client (the API types'
// module is not a dependency).
var InferencePoolGVR = schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}

// ErrPool is wrapped by the errors of an InferencePool the cell cannot use.
var ErrPool = errors.New("discovery: unusable InferencePool")

// PoolSpec is what the cell reads from an InferencePool: the selector of
// its Pods and the port to send them requests on.
type PoolSpec struct {
	// Selector is spec.selector.matchLabels as a selector.
	Selector labels.Selector
	// TargetPort is spec.targetPorts[0].number.
	TargetPort int
}

// ParsePool reads the spec of an InferencePool object. The pool's
// selector must have at least one label (an empty one would select every
// Pod of the namespace); every port after the first is ignored, since the
// cell sends a pod requests on one port.
func ParsePool(u *unstructured.Unstructured) (PoolSpec, error) {
	if u == nil {
		return PoolSpec{}, fmt.Errorf("%w: no object", ErrPool)
	}
	name := u.GetName()
	ml, found, err := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
	if err != nil || !found || len(ml) == 0 {
		return PoolSpec{}, fmt.Errorf("%w: %s: spec.selector.matchLabels is missing or empty (%v)", ErrPool, name, err)
	}
	for k, v := range ml {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return PoolSpec{}, fmt.Errorf("%w: %s: label key %q: %s", ErrPool, name, k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return PoolSpec{}, fmt.Errorf("%w: %s: label value %q: %s", ErrPool, name, v, errs[0])
		}
	}
	ports, found, err := unstructured.NestedSlice(u.Object, "spec", "targetPorts")
	if err != nil || !found || len(ports) == 0 {
		return PoolSpec{}, fmt.Errorf("%w: %s: spec.targetPorts is missing or empty (%v)", ErrPool, name, err)
	}
	first, ok := ports[0].(map[string]any)
	if !ok {
		return PoolSpec{}, fmt.Errorf("%w: %s: spec.targetPorts[0] is not an object", ErrPool, name)
	}
	port, ok := portNumber(first["number"])
	if !ok {
		return PoolSpec{}, fmt.Errorf("%w: %s: spec.targetPorts[0].number %v: want 1..65535", ErrPool, name, first["number"])
	}
	return PoolSpec{Selector: labels.SelectorFromSet(ml), TargetPort: port}, nil
}

// portNumber reads a port number as the API (int64) or a JSON decoder
// (float64) gives it.
func portNumber(v any) (int, bool) {
	var n float64
	switch x := v.(type) {
	case int64:
		n = float64(x)
	case int:
		n = float64(x)
	case float64:
		n = x
	default:
		return 0, false
	}
	if n != float64(int(n)) || n < 1 || n > 65535 {
		return 0, false
	}
	return int(n), true
}
