// Package discovery finds a cell's engine pods in the Kubernetes API: the
// Pods of a namespace that match a label selector, or the selector and
// first target port of a named InferencePool (inference.networking.k8s.io/v1,
// read with a dynamic client).
//
// # Model
//
// Source runs client-go informers (list, then watch with bookmarks,
// periodic resync, and the reflector's reconnection with backoff); it polls
// nothing itself. On every change it hands the informers' whole cache to
// Decide, a pure function (decide.go) that turns Pod objects into the
// desired pod set: the HTTP address from the pod IP and target port, the
// KV-event and replay endpoints from the pod IP and the configured ports
// or the pod's annotations, and the model, data-parallel size, role, event
// mode and KV size from the annotations and labels named in
// annotations.go. A Ready pod that is not terminating is routable; any
// other pod with an IP is kept but not routable; a pod that finished or
// left the selector is absent. Past the cell's holder cap the youngest
// pods are refused, never an older one displaced.
//
// The cell publishes each decided set into its podset.Set, which merges it
// with the static pods; package podset describes what the cell does with a
// change. Replicas of a cell each run their own Source; Decide depends only
// on the Pod objects, so replicas that have seen the same objects hold the
// same set, and a pod's holder ids are its name (and rank), the same on
// every replica.
//
// Package kubetest (beside this one) runs a real API server for the tests
// and plays the kubelet.
package discovery
