// Package discoverybench measures how fast a cell follows a Kubernetes
// fleet, against a real API server (package cell/discovery/kubetest): for
// N pods created and made Ready one after another while clients send
// requests, the time from the Ready status being written to the cell's pod
// set holding the pod as routable and to the pod's first routed request;
// then, deleting them one after another, the time from the deletion to the
// pod leaving the cell's set and to the last request it received. It
// reports p50 and p99 of each (loadtest discovery --json).
package discoverybench
