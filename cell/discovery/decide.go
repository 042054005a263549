package discovery

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cellrouter/cellrouter/cell/podset"
)

// Params are what Decide needs besides the Pods.
type Params struct {
	// Selector picks the engine Pods among those given; nil takes all.
	Selector labels.Selector
	// TargetPort is the engines' HTTP port.
	TargetPort int
	// ZMQPort and ReplayPort are the event and replay ports on the pod IP
	// (0: none), unless an annotation names the endpoint.
	ZMQPort, ReplayPort int
	// DefaultModel is the model of a pod that names none ("": the cell's).
	DefaultModel string
	// Capacity is the number of index holders discovered pods may take
	// (the cell's cap less its static pods'); a pod takes one per
	// data-parallel rank.
	Capacity int
}

// Result is the desired pod set Decide derives.
type Result struct {
	// Pods are the pods to hold, sorted by id: routable (Ready, not
	// terminating) or kept (not Ready, or terminating).
	Pods []podset.Pod
	// Refused are the pods past Capacity (podset.ReasonCap), sorted by id.
	Refused []podset.Refusal
	// Warnings name annotations that were ignored because their value is
	// invalid ("pod: key=value: why"), sorted.
	Warnings []string
}

// Decide translates the Pod objects of a namespace into the pods the cell
// holds. It is pure and deterministic (replicas that see the same Pods
// decide the same): no clock, no I/O, the order of pods does not matter.
//
//   - A Pod that does not match the selector, has no IP yet, or has
//     finished (phase Succeeded or Failed) is not in the set: a Pod that
//     leaves the set is removed from the cell.
//   - A Pod that is Ready and not terminating is routable.
//   - Any other Pod with an IP (not Ready yet, Ready no more, terminating)
//     is kept but not routable: no new requests, its index entries stay.
//   - Past Capacity, the youngest Pods (by creation time, then name) are
//     refused, so that a new Pod never displaces one the cell holds.
func Decide(pods []*corev1.Pod, p Params) Result {
	type cand struct {
		obj *corev1.Pod
		pod podset.Pod
	}
	var res Result
	var cands []cand
	for _, obj := range pods {
		if obj == nil || obj.Status.PodIP == "" || obj.Status.Phase == corev1.PodSucceeded || obj.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Selector != nil && !p.Selector.Matches(labels.Set(obj.Labels)) {
			continue
		}
		pod, warnings := translate(obj, p)
		res.Warnings = append(res.Warnings, warnings...)
		cands = append(cands, cand{obj, pod})
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i].obj.CreationTimestamp, cands[j].obj.CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return cands[i].obj.Name < cands[j].obj.Name
	})
	used := 0
	for _, c := range cands {
		if used+c.pod.Holders() > p.Capacity {
			res.Refused = append(res.Refused, podset.Refusal{ID: c.pod.ID, Source: podset.SourceKubernetes, Reason: podset.ReasonCap})
			continue
		}
		used += c.pod.Holders()
		res.Pods = append(res.Pods, c.pod)
	}
	sort.Slice(res.Pods, func(i, j int) bool { return res.Pods[i].ID < res.Pods[j].ID })
	sort.Slice(res.Refused, func(i, j int) bool { return res.Refused[i].ID < res.Refused[j].ID })
	sort.Strings(res.Warnings)
	return res
}

// translate makes one Pod object a podset.Pod, ignoring (and naming)
// annotations whose values are invalid.
func translate(obj *corev1.Pod, p Params) (podset.Pod, []string) {
	var warnings []string
	warn := func(key, v, why string) {
		warnings = append(warnings, fmt.Sprintf("%s: %s=%q: %s", obj.Name, key, v, why))
	}
	ip := obj.Status.PodIP
	pod := podset.Pod{
		ID:       obj.Name,
		UID:      string(obj.UID),
		Address:  net.JoinHostPort(ip, strconv.Itoa(p.TargetPort)),
		Routable: obj.DeletionTimestamp == nil && ready(obj),
		Model:    p.DefaultModel,
	}
	ann := obj.Annotations
	endpoint := func(key string, port int) string {
		if v, ok := ann[key]; ok {
			if validEndpoint(v) {
				return v
			}
			warn(key, v, "want tcp://host:port")
		}
		if port == 0 {
			return ""
		}
		return "tcp://" + net.JoinHostPort(ip, strconv.Itoa(port))
	}
	pod.ZMQEndpoint = endpoint(AnnotationZMQEndpoint, p.ZMQPort)
	if pod.ZMQEndpoint != "" {
		pod.ReplayEndpoint = endpoint(AnnotationReplayEndpoint, p.ReplayPort)
	}
	if v, ok := ann[AnnotationDataParallelSize]; ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 1 || n > 1024:
			warn(AnnotationDataParallelSize, v, "want an integer in 1..1024")
		case n > 1 && pod.ZMQEndpoint == "":
			warn(AnnotationDataParallelSize, v, "needs a zmq endpoint (rank r publishes on its port plus r)")
		default:
			pod.DataParallelSize = n
		}
	}
	if v := obj.Labels[LabelModel]; v != "" {
		pod.Model = v
	} else if v := ann[LabelModel]; v != "" {
		pod.Model = v
	}
	if v, ok := ann[AnnotationKVBlocks]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			warn(AnnotationKVBlocks, v, "want a non-negative integer")
		} else {
			pod.KVBlocks = n
		}
	}
	if v, ok := ann[AnnotationEvents]; ok {
		if v == "exact" || v == "none" {
			pod.Events = v
		} else {
			warn(AnnotationEvents, v, "want exact or none")
		}
	}
	if pod.ZMQEndpoint == "" {
		pod.Events = "none" // nothing to dial: the cell learns the pod's blocks
	}
	if v, ok := ann[AnnotationRole]; ok {
		if v == "prefill" || v == "decode" || v == "both" {
			pod.Role = v
		} else {
			warn(AnnotationRole, v, "want prefill, decode or both")
		}
	}
	return pod, warnings
}

// ready reports whether the Pod's Ready condition is True.
func ready(obj *corev1.Pod) bool {
	for _, c := range obj.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// validEndpoint reports whether v is a ZMQ TCP address with a numeric port.
func validEndpoint(v string) bool {
	hp, ok := strings.CutPrefix(v, "tcp://")
	if !ok {
		return false
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil || host == "" {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n < 65536
}
