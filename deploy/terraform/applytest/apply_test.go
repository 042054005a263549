package applytest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cellrouter/cellrouter/cell/discovery/kubetest"
)

// repoRoot is the module root (the folder with go.mod) above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// exports runs a script that prints `export K=V ...` lines and returns the
// assignments.
func exports(t *testing.T, env []string, name string, args ...string) map[string]string {
	t.Helper()
	vars, err := tryExports(env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return vars
}

// tryExports is exports returning its error.
func tryExports(env []string, name string, args ...string) (map[string]string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %v\n%s%s", name, err, out, stderr.String())
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		for _, kv := range strings.Fields(line) {
			k, v, ok := strings.Cut(kv, "=")
			if ok {
				vars[k] = strings.Trim(v, `'"`)
			}
		}
	}
	return vars, nil
}

// freePorts returns an API server port and an etcd port whose next port
// (etcd's peer port) is free too, below the ephemeral range (see
// kubetest.FreePort).
func freePorts(t *testing.T) (api, etcd int) {
	t.Helper()
	for range 100 {
		a, err := kubetest.FreePort(1)
		if err != nil {
			t.Fatal(err)
		}
		e, err := kubetest.FreePort(2)
		if err != nil {
			t.Fatal(err)
		}
		if a != e && a != e+1 {
			return a, e
		}
	}
	t.Fatal("no free port pair for etcd")
	return 0, 0
}

// copyTree copies the folder src to dst (files and folders only).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == ".terraform" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasSuffix(p, ".tfstate") || strings.HasSuffix(p, ".lock.hcl") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pki makes a CA and two certificates with openssl: globald's and the
// cells' (DNS name cellrouter-cell), each with both TLS usages.
func pki(t *testing.T, dir string) map[string]string {
	t.Helper()
	run := func(args ...string) {
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=test-tier-ca", "-keyout", "ca-key.pem", "-out", "ca.pem")
	for _, n := range []string{"global", "cell"} {
		run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN="+n, "-keyout", n+"-key.pem", "-out", n+".csr")
		ext := "subjectAltName=DNS:cellrouter-" + n + "\nextendedKeyUsage=serverAuth,clientAuth\n"
		if err := os.WriteFile(filepath.Join(dir, n+".cnf"), []byte(ext), 0o600); err != nil {
			t.Fatal(err)
		}
		run("x509", "-req", "-in", n+".csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "2", "-out", n+".pem", "-extfile", n+".cnf")
	}
	out := map[string]string{}
	for _, f := range []string{"ca.pem", "global.pem", "global-key.pem", "cell.pem", "cell-key.pem"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

// api is a client of the test's API server with the admin token.
type api struct {
	t      *testing.T
	server string
	token  string
	cl     *http.Client
}

func newAPI(t *testing.T, server, token, caFile string) *api {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &api{t: t, server: server, token: token, cl: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

// do sends a request and decodes a JSON answer into out (when not nil); it
// returns the status.
func (a *api) do(method, path string, body, out any) int {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.server+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.cl.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			a.t.Fatalf("%s %s: %v\n%s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// get fetches an object, failing the test unless it exists.
func (a *api) get(path string, out any) {
	a.t.Helper()
	if code := a.do(http.MethodGet, path, nil, out); code != http.StatusOK {
		a.t.Fatalf("GET %s = %d, want 200", path, code)
	}
}

// allowed asks the API server's authorizer whether user may do verb on
// resource (in group) in namespace.
func (a *api) allowed(user, ns, group, resource, verb string) bool {
	a.t.Helper()
	review := map[string]any{
		"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
		"spec": map[string]any{"user": user, "resourceAttributes": map[string]any{
			"namespace": ns, "group": group, "resource": resource, "verb": verb}},
	}
	var out struct {
		Status struct {
			Allowed bool `json:"allowed"`
		} `json:"status"`
	}
	if code := a.do(http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", review, &out); code != http.StatusCreated {
		a.t.Fatalf("SubjectAccessReview = %d", code)
	}
	return out.Status.Allowed
}

// TestTofuApplySingleCluster applies examples/single-cluster (discovery of
// the simulated engines, API keys and mutual TLS from Secrets the modules
// create, wait_for_rollout false since no kubelet runs) to a real API
// server, checks the objects it made, RBAC through the server's own
// authorizer, and destroys them all.
func TestTofuApplySingleCluster(t *testing.T) {
	root := repoRoot(t)
	shared := filepath.Join(root, "..", "shared", "tools")
	start, stop := filepath.Join(shared, "k8s", "start.sh"), filepath.Join(shared, "k8s", "stop.sh")
	install := filepath.Join(shared, "terraform", "install.sh")
	for _, f := range []string{start, stop, install} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("skipped: %s is absent (the project's CI machines keep a real kube-apiserver and OpenTofu there; see deploy/terraform/README.md)", f)
		}
	}
	for _, tool := range []string{"openssl", "curl", "xz"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s is not installed (apt-get install -y %s; .ci/run installs it)", tool, tool)
		}
	}

	// The control plane, on ports of its own.
	k8sDir := t.TempDir()
	apiPort, etcdPort := freePorts(t)
	env := append(os.Environ(), fmt.Sprintf("K8S_API_PORT=%d", apiPort), fmt.Sprintf("K8S_ETCD_PORT=%d", etcdPort))
	t.Cleanup(func() { _ = exec.Command(stop, k8sDir).Run() })
	// start.sh waits 60 s for the API server; a loaded 2-core machine can
	// take longer to start it once, so a second attempt follows a stop.
	k8s, err := tryExports(env, start, k8sDir)
	if err != nil {
		t.Logf("control plane did not start (%v); once more", err)
		_ = exec.Command(stop, k8sDir).Run()
		k8s = exports(t, env, start, k8sDir)
	}
	cl := newAPI(t, k8s["K8S_SERVER"], k8s["K8S_TOKEN"], k8s["K8S_CA"])

	// OpenTofu from the offline mirror, on a copy of the modules and the
	// example (its state and .terraform stay out of the tree).
	tf := exports(t, os.Environ(), install)
	tofuEnv := append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE="+tf["TF_CLI_CONFIG_FILE"],
		"PATH="+strings.ReplaceAll(tf["PATH"], "$PATH", os.Getenv("PATH")))
	tofuBin := filepath.Join(strings.Split(tf["PATH"], ":")[0], "tofu")
	work := t.TempDir()
	copyTree(t, filepath.Join(root, "deploy", "terraform", "modules"), filepath.Join(work, "modules"))
	copyTree(t, filepath.Join(root, "deploy", "terraform", "examples", "single-cluster"), filepath.Join(work, "examples", "single-cluster"))
	example := filepath.Join(work, "examples", "single-cluster")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tofu := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, tofuBin, append(args, "-no-color")...)
		cmd.Dir, cmd.Env = example, tofuEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tofu %s: %v\n%s", args[0], err, out)
		}
	}

	certs := pki(t, t.TempDir())
	sum := sha256.Sum256([]byte("test-inference-key"))
	keyFile := fmt.Sprintf("tenants:\n  - name: test\nkeys:\n  - sha256: %s\n    tenant: test\n    scopes: [inference]\n", hex.EncodeToString(sum[:]))
	vars := map[string]any{
		"image":            "localhost/cellrouter:apply-test",
		"kubeconfig":       k8s["KUBECONFIG"],
		"kube_context":     "local",
		"wait_for_rollout": false,
		"cells":            map[string]any{"cell-a": map[string]any{"demo_engines": 2}},
		"api_keys":         map[string]any{"key_file": keyFile},
		"tls": map[string]any{
			"ca_pem": certs["ca.pem"],
			"global": map[string]any{"cert_pem": certs["global.pem"], "key_pem": certs["global-key.pem"]},
			"cell":   map[string]any{"cert_pem": certs["cell.pem"], "key_pem": certs["cell-key.pem"]},
		},
	}
	varFile := filepath.Join(work, "test.tfvars.json")
	b, _ := json.Marshal(vars)
	if err := os.WriteFile(varFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	tofu("init", "-input=false")
	tofu("apply", "-auto-approve", "-input=false", "-var-file="+varFile)
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			cmd := exec.Command(tofuBin, "destroy", "-auto-approve", "-input=false", "-no-color", "-var-file="+varFile)
			cmd.Dir, cmd.Env = example, tofuEnv
			_ = cmd.Run()
		}
	})

	const ns = "/api/v1/namespaces/cellrouter"
	const rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/cellrouter"
	cl.get(ns+"/serviceaccounts/cell-a", nil)
	var role struct {
		Rules []struct {
			APIGroups []string `json:"apiGroups"`
			Resources []string `json:"resources"`
			Verbs     []string `json:"verbs"`
		} `json:"rules"`
	}
	cl.get(rbac+"/roles/cell-a-discovery", &role)
	var rules []string
	for _, r := range role.Rules {
		slices.Sort(r.Verbs) // a set: the provider does not keep the order
		rules = append(rules, fmt.Sprintf("%v %v %v", r.APIGroups, r.Resources, r.Verbs))
	}
	if want := []string{"[] [pods] [get list watch]", "[inference.networking.k8s.io] [inferencepools] [get list watch]"}; !slices.Equal(rules, want) {
		t.Errorf("Role rules %q, want %q", rules, want)
	}
	cl.get(rbac+"/rolebindings/cell-a-discovery", nil)
	for _, s := range []string{"cell-a-api-keys", "cell-a-tls", "globald-api-keys", "globald-tls"} {
		cl.get(ns+"/secrets/"+s, nil)
	}

	// The real authorizer: the cell's ServiceAccount reads pods and pools,
	// and nothing else.
	sa := "system:serviceaccount:cellrouter:cell-a"
	for _, c := range []struct {
		group, resource, verb string
		want                  bool
	}{
		{"", "pods", "watch", true},
		{"", "pods", "list", true},
		{"inference.networking.k8s.io", "inferencepools", "get", true},
		{"", "pods", "delete", false},
		{"", "pods", "create", false},
		{"", "secrets", "get", false},
		{"", "configmaps", "list", false},
		{"apps", "deployments", "get", false},
	} {
		if got := cl.allowed(sa, "cellrouter", c.group, c.resource, c.verb); got != c.want {
			t.Errorf("%s may %s %s.%s: %v, want %v", sa, c.verb, c.resource, c.group, got, c.want)
		}
	}

	// The cell's pod spec: its ServiceAccount, POD_NAMESPACE, both Secrets
	// mounted read-only as directories; the config discovers the engines.
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					ServiceAccountName string `json:"serviceAccountName"`
					Containers         []struct {
						Env []struct {
							Name      string `json:"name"`
							ValueFrom *struct {
								FieldRef struct {
									FieldPath string `json:"fieldPath"`
								} `json:"fieldRef"`
							} `json:"valueFrom"`
						} `json:"env"`
						VolumeMounts []struct {
							Name      string `json:"name"`
							MountPath string `json:"mountPath"`
							ReadOnly  bool   `json:"readOnly"`
							SubPath   string `json:"subPath"`
						} `json:"volumeMounts"`
					} `json:"containers"`
					Volumes []struct {
						Name   string `json:"name"`
						Secret *struct {
							SecretName string `json:"secretName"`
						} `json:"secret"`
					} `json:"volumes"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	cl.get("/apis/apps/v1/namespaces/cellrouter/deployments/cell-a", &dep)
	ps := dep.Spec.Template.Spec
	if ps.ServiceAccountName != "cell-a" {
		t.Errorf("serviceAccountName %q, want cell-a", ps.ServiceAccountName)
	}
	c := ps.Containers[0]
	if !slices.ContainsFunc(c.Env, func(e struct {
		Name      string `json:"name"`
		ValueFrom *struct {
			FieldRef struct {
				FieldPath string `json:"fieldPath"`
			} `json:"fieldRef"`
		} `json:"valueFrom"`
	}) bool {
		return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
	}) {
		t.Error("no POD_NAMESPACE from metadata.namespace")
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if m.ReadOnly && m.SubPath == "" {
			mounts[m.Name] = m.MountPath
		}
	}
	if mounts["api-keys"] != "/etc/cellrouter/keys" || mounts["tls"] != "/etc/cellrouter/tls" {
		t.Errorf("read-only directory mounts %v, want api-keys and tls", mounts)
	}
	secrets := map[string]string{}
	for _, v := range ps.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	if secrets["api-keys"] != "cell-a-api-keys" || secrets["tls"] != "cell-a-tls" {
		t.Errorf("secret volumes %v", secrets)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	cl.get(ns+"/configmaps/cell-a-config", &cm)
	var cfg struct {
		Discovery struct {
			Kubernetes map[string]any `yaml:"kubernetes"`
		} `yaml:"discovery"`
		Auth map[string]string `yaml:"auth"`
		TLS  map[string]string `yaml:"tls"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["celld.yaml"]), &cfg); err != nil {
		t.Fatalf("celld.yaml: %v", err)
	}
	if k := cfg.Discovery.Kubernetes; k["enabled"] != true || k["selector"] != "app.kubernetes.io/name=enginesim,app.kubernetes.io/instance=cell-a" || k["zmq_port"] != 8001 {
		t.Errorf("discovery.kubernetes = %v, want the demo engines' selector and ports", k)
	}
	if cfg.Auth["key_file"] != "/etc/cellrouter/keys/api-keys.yaml" || cfg.TLS["ca_file"] != "/etc/cellrouter/tls/ca.crt" || cfg.TLS["client_auth"] != "verify_if_given" {
		t.Errorf("auth %v tls %v, want the mounted files", cfg.Auth, cfg.TLS)
	}

	// Destroy removes everything: the namespace goes (the controller
	// manager empties it), and with it every object above.
	tofu("destroy", "-auto-approve", "-input=false", "-var-file="+varFile)
	destroyed = true
	deadline := time.Now().Add(2 * time.Minute)
	for cl.do(http.MethodGet, "/api/v1/namespaces/cellrouter", nil, nil) != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("namespace cellrouter still there 2 minutes after tofu destroy")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range []string{ns + "/serviceaccounts/cell-a", rbac + "/roles/cell-a-discovery", ns + "/secrets/cell-a-tls", "/apis/apps/v1/namespaces/cellrouter/deployments/globald"} {
		if code := cl.do(http.MethodGet, p, nil, nil); code != http.StatusNotFound {
			t.Errorf("GET %s after destroy = %d, want 404", p, code)
		}
	}
}
