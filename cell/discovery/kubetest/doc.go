// Package kubetest runs a real Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager from ../shared/tools/k8s) on
// loopback for tests and benchmarks, and plays the kubelet that does not
// run there: it creates a Node, creates Pods already bound to it, and sets
// their IP and Ready condition through the status subresource. Each
// simulated pod gets its own loopback address (127.0.0.2, 127.0.0.3, ...),
// so that a pod IP and port work as in a cluster.
//
// Tools finds the control plane's tools; when they are absent (a user's
// clone) tests skip with the reason it gives.
package kubetest
