// Package applytest applies the OpenTofu example examples/single-cluster
// to a real Kubernetes API server (no kubelet: ../shared/tools/k8s) and
// checks that every object passes the server's validation, RBAC included,
// then destroys it. It holds only the test; the test skips, saying why,
// where the control plane or OpenTofu tools are absent (a user's clone).
package applytest
