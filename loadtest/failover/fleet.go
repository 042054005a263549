package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// model is the simulated pods' model name (enginesim's default).
const model = "enginesim"

// blockSize is the router block size of the cells, the pods and globald.
const blockSize = 16

// pod is one simulated engine pod, its own enginesim process.
type pod struct {
	id, http string // id and host:port
	cell     int
	p        *proc
}

// replicaProc is one celld replica.
type replicaProc struct {
	cell         int
	id           string // replica id
	http, gossip string
	// zmqBind is the replica's ZMQ bind socket (tcp://host:port), where
	// anyone who reaches it may publish events for a pod (the event flood).
	zmqBind string
	p       *proc
}

// globalProc is one globald.
type globalProc struct {
	name, http, gossip string
	p                  *proc
}

// fleet is a running set of processes.
type fleet struct {
	cfg      Config
	dir      string // logs and configs
	procs    procs
	pods     []*pod
	replicas []*replicaProc
	globals  []*globalProc
	client   *http.Client
	used     map[int]bool // ports handed out: a released port may come back
}

// port returns a free loopback port not handed out before (TCP and UDP
// when udp is set).
func (f *fleet) port(udp bool) (int, error) {
	for range 100 {
		p, err := freePort(udp)
		if err != nil {
			return 0, err
		}
		if !f.used[p] {
			f.used[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("failover: no fresh free port")
}

// portRange returns the first of n consecutive free ports none of which
// was handed out before.
func (f *fleet) portRange(n int) (int, error) {
	for range 100 {
		base, err := freeRange(n)
		if err != nil {
			return 0, err
		}
		fresh := true
		for i := range n {
			fresh = fresh && !f.used[base+i]
		}
		if fresh {
			for i := range n {
				f.used[base+i] = true
			}
			return base, nil
		}
	}
	return 0, fmt.Errorf("failover: no fresh range of %d free ports", n)
}

// exited names a started process that is no longer running ("" if none).
func (f *fleet) exited() string {
	f.procs.mu.Lock()
	defer f.procs.mu.Unlock()
	for _, p := range f.procs.list {
		p.mu.Lock()
		started := p.cmd != nil
		p.mu.Unlock()
		if started && !p.running() {
			return p.name
		}
	}
	return ""
}

// freePort returns a loopback port free for both TCP and UDP (memberlist
// uses both), or for TCP only.
func freePort(udp bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if udp {
			u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				l.Close()
				continue
			}
			u.Close()
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("failover: no free port")
}

// freeRange returns the first of n consecutive free TCP ports.
func freeRange(n int) (int, error) {
	for range 200 {
		base := 20000 + rand.IntN(40000)
		ok := true
		var ls []net.Listener
		for i := range n {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
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
			return base, nil
		}
	}
	return 0, fmt.Errorf("failover: no %d consecutive free ports", n)
}

func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// startFleet allocates the addresses, writes the configurations and starts
// every process, then waits until the fleet serves: every globald ready
// and listing every cell with all its replicas and a summary.
func startFleet(ctx context.Context, cfg Config, bin, dir string) (f *fleet, err error) {
	f = &fleet{cfg: cfg, dir: dir, client: &http.Client{Timeout: 2 * time.Second}, used: map[int]bool{}}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	for g := range cfg.Globals {
		hp, err := f.port(false)
		if err != nil {
			return f, err
		}
		gp, err := f.port(true)
		if err != nil {
			return f, err
		}
		f.globals = append(f.globals, &globalProc{name: fmt.Sprintf("global/g%d", g), http: addr(hp), gossip: addr(gp)})
	}
	for c := range cfg.Cells {
		for r := range cfg.ReplicasPerCell {
			hp, err := f.port(false)
			if err != nil {
				return f, err
			}
			gp, err := f.port(true)
			if err != nil {
				return f, err
			}
			zp, err := f.port(false)
			if err != nil {
				return f, err
			}
			f.replicas = append(f.replicas, &replicaProc{cell: c, id: fmt.Sprintf("r%d", r), http: addr(hp), gossip: addr(gp), zmqBind: "tcp://" + addr(zp)})
		}
		for i := range cfg.PodsPerCell {
			base, err := f.portRange(3)
			if err != nil {
				return f, err
			}
			prefix := fmt.Sprintf("c%d-p%d", c, i)
			pd := &pod{id: prefix + "-0", http: addr(base), cell: c}
			pd.p = f.procs.add(&proc{name: "pod-" + prefix, bin: filepath.Join(bin, "loadtest"), logs: dir, args: []string{
				"enginesim", "--pods", "1", "--id", prefix, "--base-port", strconv.Itoa(base), "--blocks", strconv.Itoa(cfg.PodBlocks),
				"--block-size", strconv.Itoa(blockSize), "--time-scale", strconv.FormatFloat(cfg.PodTimeScale, 'g', -1, 64), "--json"}})
			f.pods = append(f.pods, pd)
		}
	}
	var gossipSeeds []string
	for _, g := range f.globals {
		gossipSeeds = append(gossipSeeds, g.gossip)
	}
	for _, g := range f.globals {
		grpcPort, err := f.port(false)
		if err != nil {
			return f, err
		}
		args := []string{"--http-addr", g.http, "--grpc-addr", addr(grpcPort), "--gossip-bind", g.gossip, "--gossip-name", g.name,
			"--block-size", strconv.Itoa(blockSize), "--request-timeout", cfg.RequestTimeout.String(),
			"--gossip-probe-interval", cfg.ProbeInterval.String(), "--gossip-probe-timeout", cfg.ProbeTimeout.String(),
			"--gossip-suspicion-mult", strconv.Itoa(cfg.SuspicionMult), "--log-level", "warn"}
		for _, s := range gossipSeeds {
			if s != g.gossip {
				args = append(args, "--seed", s)
			}
		}
		g.p = f.procs.add(&proc{name: strings.ReplaceAll(g.name, "/", "-"), bin: filepath.Join(bin, "globald"), logs: dir, args: args})
	}
	for _, r := range f.replicas {
		grpcPort, err := f.port(false)
		if err != nil {
			return f, err
		}
		path := filepath.Join(dir, fmt.Sprintf("cell-%d-%s.yaml", r.cell, r.id))
		if err := os.WriteFile(path, []byte(f.cellYAML(r, addr(grpcPort), gossipSeeds)), 0o644); err != nil {
			return f, fmt.Errorf("failover: %w", err)
		}
		r.p = f.procs.add(&proc{name: fmt.Sprintf("cell-%d-%s", r.cell, r.id), bin: filepath.Join(bin, "celld"), logs: dir,
			args: []string{"--config", path, "--log-level", "warn"}})
	}
	for _, pd := range f.pods {
		if err := pd.p.start(); err != nil {
			return f, err
		}
	}
	for _, pd := range f.pods {
		if err := f.waitFor(ctx, "pod "+pd.id, func() bool { return f.ok("http://" + pd.http + "/health") }); err != nil {
			return f, err
		}
	}
	for _, g := range f.globals {
		if err := g.p.start(); err != nil {
			return f, err
		}
	}
	for _, r := range f.replicas {
		if err := r.p.start(); err != nil {
			return f, err
		}
	}
	if err := f.waitFor(ctx, "the fleet (every globald ready, every cell with all its replicas)", f.complete); err != nil {
		return f, err
	}
	return f, nil
}

// cellYAML is replica r's celld configuration.
func (f *fleet) cellYAML(r *replicaProc, grpc string, seeds []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cell_id: cell-%d\nhttp_addr: %s\ngrpc_addr: %s\n", r.cell, r.http, grpc)
	fmt.Fprintf(&b, "health_interval: 200ms\nhealth_timeout: 150ms\ntick_interval: 100ms\nshutdown_timeout: 10s\n")
	fmt.Fprintf(&b, "events:\n  block_size: %d\n  default_model: %s\n  dead_after: 2s\n", blockSize, model)
	fmt.Fprintf(&b, "zmq:\n  bind: %s\nindex:\n  max_blocks: %d\n", r.zmqBind, f.cfg.IndexMaxBlocks)
	b.WriteString("pods:\n")
	for _, pd := range f.pods {
		if pd.cell != r.cell {
			continue
		}
		host, port, _ := net.SplitHostPort(pd.http)
		p, _ := strconv.Atoi(port)
		fmt.Fprintf(&b, "  - id: %s\n    address: %s\n    zmq_endpoint: tcp://%s:%d\n    replay_endpoint: tcp://%s:%d\n    kv_blocks: %d\n",
			pd.id, pd.http, host, p+1, host, p+2, f.cfg.PodBlocks)
	}
	fmt.Fprintf(&b, "replica:\n  id: %s\n", r.id)
	fmt.Fprintf(&b, "gossip:\n  bind: %s\n  summary_interval: 500ms\n  probe_interval: %s\n  probe_timeout: %s\n  suspicion_mult: %d\n  seeds:\n",
		r.gossip, f.cfg.ProbeInterval, f.cfg.ProbeTimeout, f.cfg.SuspicionMult)
	for _, s := range seeds {
		fmt.Fprintf(&b, "    - %s\n", s)
	}
	return b.String()
}

// stop stops every process.
func (f *fleet) stop() { f.procs.stopAll(15 * time.Second) }

// ok reports whether GET url answers 200.
func (f *fleet) ok(url string) bool {
	resp, err := f.client.Get(url)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitFor polls cond every 50ms until it holds, ctx ends or StartTimeout
// passes.
func (f *fleet) waitFor(ctx context.Context, what string, cond func() bool) error {
	deadline := time.Now().Add(f.cfg.StartTimeout)
	for !cond() {
		if name := f.exited(); name != "" {
			return fmt.Errorf("failover: %s exited while waiting for %s (see %s/%s.log)", name, what, f.dir, name)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("failover: timed out after %v waiting for %s (logs in %s)", f.cfg.StartTimeout, what, f.dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// complete reports whether every globald is ready and lists every cell
// with all its replicas and a summary.
func (f *fleet) complete() bool {
	for _, g := range f.globals {
		if !f.ok("http://" + g.http + "/readyz") {
			return false
		}
		for c := range f.cfg.Cells {
			if f.endpoints(g, c) != f.cfg.ReplicasPerCell || !f.hasSummary(g, c) {
				return false
			}
		}
	}
	return true
}

// metric returns the value of the sample name{cell="cell-c"} in globald
// g's /metrics, or -1 when it is missing or g does not answer.
func (f *fleet) metric(g *globalProc, name string, c int) float64 {
	resp, err := f.client.Get("http://" + g.http + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return -1
	}
	return sample(string(body), fmt.Sprintf(`%s{cell="cell-%d"}`, name, c))
}

// sample finds a sample line "key value" in a Prometheus text exposition.
func sample(text, key string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, key+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// endpoints is how many live replicas globald g lists for cell c (-1: g
// does not answer).
func (f *fleet) endpoints(g *globalProc, c int) int {
	return int(f.metric(g, "cellrouter_global_cell_endpoints", c))
}

func (f *fleet) hasSummary(g *globalProc, c int) bool {
	return f.metric(g, "cellrouter_global_summary_bytes", c) > 0
}

// podState returns the state replica r reports for pod id ("" when r does
// not answer).
func (f *fleet) podState(r *replicaProc, id string) string {
	resp, err := f.client.Get("http://" + r.http + "/v1/cell/pods")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var out struct {
		Pods []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"pods"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return ""
	}
	for _, p := range out.Pods {
		if p.ID == id {
			return p.State
		}
	}
	return ""
}

// replicasOf returns the replicas of cell c.
func (f *fleet) replicasOf(c int) []*replicaProc {
	var out []*replicaProc
	for _, r := range f.replicas {
		if r.cell == c {
			out = append(out, r)
		}
	}
	return out
}
