package discovery

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// serviceAccountNamespace is the file a pod's service account mount names
// its namespace in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// restConfig returns the API client configuration: the kubeconfig at path,
// or the in-cluster one when path is "".
func restConfig(path string) (*rest.Config, error) {
	var (
		rc  *rest.Config
		err error
	)
	if path == "" {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = clientcmd.BuildConfigFromFlags("", path)
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: kubernetes client config (kubeconfig %q): %w", path, err)
	}
	rc.UserAgent = "cellrouter-celld"
	return rc, nil
}

// resolveNamespace returns ns, else POD_NAMESPACE, else the service
// account's namespace.
func resolveNamespace(ns string) (string, error) {
	if ns != "" {
		return ns, nil
	}
	if v := os.Getenv("POD_NAMESPACE"); v != "" {
		return v, nil
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return "", fmt.Errorf("%w: discovery.kubernetes.namespace is empty, POD_NAMESPACE is unset and %s is unreadable: %v",
			ErrConfig, serviceAccountNamespace, err)
	}
	return strings.TrimSpace(string(b)), nil
}
