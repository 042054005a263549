package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ToolsEnv names an environment variable that, when set, is the folder of
// start.sh and stop.sh instead of <repository>/../shared/tools/k8s.
const ToolsEnv = "CELLROUTER_K8S_TOOLS"

// Tools returns the folder holding start.sh and stop.sh, or why there is
// none usable (for a test's skip message).
func Tools() (string, error) {
	dir := os.Getenv(ToolsEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(filepath.Dir(root), "shared", "tools", "k8s")
	}
	for _, f := range []string{"start.sh", "stop.sh"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("kubetest: no Kubernetes control plane tools (%s missing; set %s or keep shared/ beside the repository)", filepath.Join(dir, f), ToolsEnv)
		}
	}
	for _, bin := range []string{"openssl", "curl", "xz"} {
		if _, err := exec.LookPath(bin); err != nil {
			return "", fmt.Errorf("kubetest: %s is not installed (start.sh needs it; apt-get install -y %s)", bin, bin)
		}
	}
	return dir, nil
}

// repoRoot walks up from the working directory to the folder of go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Plane is a running control plane. Its methods may be called
// concurrently, but StopAPIServer and StartAPIServer not with each other.
type Plane struct {
	// Dir is the plane's scratch folder (binaries, etcd data, logs).
	Dir string
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// Config is the admin client configuration; Client and Dynamic use it.
	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface

	tools   string
	apiPort int

	mu      sync.Mutex
	apiArgs []string
	apiCmd  *exec.Cmd
	apiDone chan struct{}
}

var exported = regexp.MustCompile(`export KUBECONFIG='([^']*)'`)

// Start starts a control plane in dir (created if missing) on free ports,
// which takes about 15 seconds.
func Start(tools, dir string) (*Plane, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	apiPort, err := FreePort(1)
	if err != nil {
		return nil, err
	}
	etcdPort, err := FreePort(2)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("bash", filepath.Join(tools, "start.sh"), dir)
	cmd.Env = append(os.Environ(), "K8S_API_PORT="+strconv.Itoa(apiPort), "K8S_ETCD_PORT="+strconv.Itoa(etcdPort))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	p := &Plane{Dir: dir, tools: tools, apiPort: apiPort}
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("kubetest: start.sh: %v: %s %s (logs in %s)", err, out, stderr.String(), dir)
	}
	m := exported.FindSubmatch(out)
	if m == nil {
		p.Stop()
		return nil, fmt.Errorf("kubetest: start.sh printed no kubeconfig: %s", out)
	}
	p.Kubeconfig = string(m[1])
	if p.Config, err = clientcmd.BuildConfigFromFlags("", p.Kubeconfig); err != nil {
		p.Stop()
		return nil, err
	}
	p.Config.QPS, p.Config.Burst = 1000, 2000 // the test plays a busy kubelet
	if p.Client, err = kubernetes.NewForConfig(p.Config); err != nil {
		p.Stop()
		return nil, err
	}
	if p.Dynamic, err = dynamic.NewForConfig(p.Config); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// FreePort returns a loopback port that is free, with the n-1 ports after
// it (etcd takes a client and a peer port). It picks below the kernel's
// ephemeral range: a port in that range can be taken, while the plane
// runs or while its API server is down, by the local end of any outgoing
// connection (or by a client's own retries to the stopped server: a TCP
// self-connect), and the API server then cannot bind it again.
func FreePort(n int) (int, error) {
	lo, hi := 10000, ephemeralLow()
	if hi-lo < 1000 {
		lo, hi = 20000, 50000 // an odd ephemeral range: fall back to chance
	}
	for range 200 {
		port := lo + rand.IntN(hi-lo-n)
		ok := true
		var ls []net.Listener
		for i := range n {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i)))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return port, nil
		}
	}
	return 0, errors.New("kubetest: no free port")
}

// ephemeralLow returns the first port of the kernel's ephemeral range
// (32768, the Linux default, where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// Stop stops every process of the plane (stop.sh) and waits for them.
func (p *Plane) Stop() {
	_ = exec.Command("bash", filepath.Join(p.tools, "stop.sh"), p.Dir).Run()
	p.mu.Lock()
	done := p.apiDone
	p.mu.Unlock()
	if done != nil {
		<-done
	}
}

// StopAPIServer stops the kube-apiserver alone (etcd and the controller
// manager keep running) and waits until it has exited. StartAPIServer
// starts it again with the same arguments.
func (p *Plane) StopAPIServer() error {
	pidFile := filepath.Join(p.Dir, "apiserver.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("kubetest: %s: %w", pidFile, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.apiArgs == nil {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			return fmt.Errorf("kubetest: the apiserver's command line: %w", err)
		}
		p.apiArgs = strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("kubetest: stop apiserver %d: %w", pid, err)
	}
	if p.apiDone != nil {
		<-p.apiDone // ours: reaped by its Wait
	} else {
		for deadline := time.Now().Add(30 * time.Second); syscall.Kill(pid, 0) == nil; {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return os.Remove(pidFile)
}

// StartAPIServer starts the kube-apiserver that StopAPIServer stopped and
// waits until it answers /readyz.
func (p *Plane) StartAPIServer(ctx context.Context) error {
	p.mu.Lock()
	if p.apiArgs == nil {
		p.mu.Unlock()
		return errors.New("kubetest: StartAPIServer before StopAPIServer")
	}
	log, err := os.OpenFile(filepath.Join(p.Dir, "apiserver.log"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	cmd := exec.Command(p.apiArgs[0], p.apiArgs[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		p.mu.Unlock()
		return fmt.Errorf("kubetest: start apiserver: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	p.apiCmd, p.apiDone = cmd, done
	p.mu.Unlock()
	if err := os.WriteFile(filepath.Join(p.Dir, "apiserver.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	for {
		if body, err := p.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil && string(body) == "ok" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubetest: apiserver not ready again: %w", ctx.Err())
		case <-done:
			path := filepath.Join(p.Dir, "apiserver.log")
			return fmt.Errorf("kubetest: apiserver exited; the end of %s:\n%s", path, tail(path, 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of the file at path, or why it cannot.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
