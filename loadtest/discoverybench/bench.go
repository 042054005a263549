package discoverybench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/cell/discovery"
	"github.com/cellrouter/cellrouter/cell/discovery/kubetest"
	"github.com/cellrouter/cellrouter/loadtest/enginesim"
	"github.com/cellrouter/cellrouter/loadtest/report"
)

// Config configures a run.
type Config struct {
	// Pods is the number of pods created, made Ready and deleted.
	Pods int
	// Interval is the pause between two pods' Ready (and deletions).
	Interval time.Duration
	// Workers is the number of clients sending requests throughout.
	Workers int
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
}

// DefaultConfig returns 100 pods, 100 ms apart, 8 clients.
func DefaultConfig() Config {
	return Config{Pods: 100, Interval: 100 * time.Millisecond, Workers: 8}
}

// Dist is a latency distribution in milliseconds.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// Report is a run's result.
type Report struct {
	Pods int `json:"pods"`
	// ReadyToRoutable is from the Ready status write being sent to the API
	// server to the pod being routable in the cell's pod set (the write's
	// own round trip included: the watch may tell the cell first).
	ReadyToRoutable Dist `json:"ready_to_routable"`
	// ReadyToFirstRequest is from the Ready status written to the first
	// request the pod received from the cell.
	ReadyToFirstRequest Dist `json:"ready_to_first_request"`
	// DeleteToRemoved is from the deletion being sent to the pod leaving
	// the set.
	DeleteToRemoved Dist `json:"delete_to_removed"`
	// DeleteToLastRequest is from the deletion to the last request the pod
	// received (0 when its last request came before the deletion).
	DeleteToLastRequest Dist `json:"delete_to_last_request"`
	// Requests counts the clients' requests; Failed those that failed.
	Requests int64 `json:"requests"`
	Failed   int64 `json:"failed"`
}

type sim struct {
	name, ip string
	pod      *enginesim.Pod
	srv      *http.Server
	done     chan struct{}
	mu       sync.Mutex
	first    time.Time
	last     time.Time
}

func startSim(name, ip string) (*sim, error) {
	cfg := enginesim.DefaultConfig()
	cfg.ID, cfg.Model, cfg.HTTPAddr, cfg.TimeScale = name, "m", "", 0
	cfg.Events.Disabled = true
	cfg.Logger = slog.New(slog.DiscardHandler)
	pod, err := enginesim.NewPod(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "8000"))
	if err != nil {
		pod.Close()
		return nil, err
	}
	s := &sim{name: name, ip: ip, pod: pod, done: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(cell.PodSetVersionHeader) != "" {
			now := time.Now()
			s.mu.Lock()
			if s.first.IsZero() {
				s.first = now
			}
			s.last = now
			s.mu.Unlock()
		}
		pod.Handler().ServeHTTP(w, r)
	})}
	go func() { defer close(s.done); _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *sim) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
	s.pod.Close()
}

func (s *sim) times() (first, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, s.last
}

// Run starts a control plane from tools in a temporary folder, a cell that
// discovers its pods, and measures. It stops everything before it returns.
func Run(ctx context.Context, tools string, cfg Config) (*Report, error) {
	if cfg.Pods < 1 || cfg.Pods > 250 {
		return nil, fmt.Errorf("discoverybench: pods %d: want 1..250", cfg.Pods)
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	dir, err := os.MkdirTemp("", "cellrouter-discoverybench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(progress, "starting the control plane")
	plane, err := kubetest.Start(tools, dir)
	if err != nil {
		return nil, err
	}
	defer plane.Stop()
	const ns = "bench"
	if err := plane.Setup(ctx, ns); err != nil {
		return nil, err
	}
	cc := cell.DefaultConfig()
	cc.HTTPAddr, cc.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cc.Events.DefaultModel = "m"
	kc := discovery.DefaultKubernetesConfig()
	kc.Enabled, kc.Kubeconfig, kc.Namespace, kc.Selector, kc.ZMQPort, kc.ReplayPort = true, plane.Kubeconfig, ns, "app=sim", 0, 0
	cc.Discovery.Kubernetes = kc
	c, err := cell.New(cc, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	cctx, stopCell := context.WithCancel(ctx)
	cellDone := make(chan struct{})
	go func() { defer close(cellDone); _ = c.Run(cctx) }()
	defer func() { stopCell(); <-cellDone }()

	// Watch the pod set: when each pod turned routable and left.
	var mu sync.Mutex
	routableAt, removedAt := map[string]time.Time{}, map[string]time.Time{}
	changes, unsub := c.PodSet().Subscribe()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		defer unsub()
		seen := map[string]bool{}
		for {
			snap := c.PodSet().Load()
			now := time.Now()
			mu.Lock()
			for _, p := range snap.Pods {
				if p.Routable && routableAt[p.ID].IsZero() {
					routableAt[p.ID] = now
				}
				seen[p.ID] = true
			}
			for id := range seen {
				if !snap.Has(id) && removedAt[id].IsZero() {
					removedAt[id] = now
				}
			}
			mu.Unlock()
			select {
			case <-cctx.Done():
				return
			case <-changes:
			}
		}
	}()
	defer func() { stopCell(); <-watchDone }()

	// An anchor pod keeps requests flowing from start to end.
	sims := make([]*sim, 0, cfg.Pods+1)
	defer func() {
		for _, s := range sims {
			s.stop()
		}
	}()
	anchor, err := startSim("anchor", kubetest.LoopbackIP(0))
	if err != nil {
		return nil, err
	}
	sims = append(sims, anchor)
	if err := plane.StartPod(ctx, ns, kubetest.PodSpec{Name: "anchor", Labels: map[string]string{"app": "sim"}}, anchor.ip); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(time.Minute); !c.PodSet().Load().Routable("anchor"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return nil, errors.New("discoverybench: the anchor pod never became routable")
		}
	}
	requests, failed, stopLoad := startLoad("http://"+c.HTTPAddr(), cfg.Workers)

	fmt.Fprintf(progress, "creating %d pods, one Ready every %v\n", cfg.Pods, cfg.Interval)
	readyAt := map[string]time.Time{}
	for i := range cfg.Pods {
		name := fmt.Sprintf("pod-%03d", i)
		s, err := startSim(name, kubetest.LoopbackIP(1+i))
		if err != nil {
			stopLoad()
			return nil, err
		}
		sims = append(sims, s)
		if err := plane.CreatePod(ctx, ns, kubetest.PodSpec{Name: name, Labels: map[string]string{"app": "sim"}}); err != nil {
			stopLoad()
			return nil, err
		}
		readyAt[name] = time.Now() // the write is sent: the watch may tell the cell before it returns
		if err := plane.SetStatus(ctx, ns, name, s.ip, true); err != nil {
			stopLoad()
			return nil, err
		}
		time.Sleep(cfg.Interval)
	}
	settle := func(what string, done func() bool) {
		for deadline := time.Now().Add(time.Minute); !done() && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		}
		fmt.Fprintln(progress, what)
	}
	settle("every pod received a request", func() bool {
		for _, s := range sims {
			if f, _ := s.times(); f.IsZero() {
				return false
			}
		}
		return true
	})
	fmt.Fprintf(progress, "deleting the %d pods, one every %v\n", cfg.Pods, cfg.Interval)
	deletedAt := map[string]time.Time{}
	for _, s := range sims[1:] {
		deletedAt[s.name] = time.Now()
		if err := plane.DeletePod(ctx, ns, s.name); err != nil {
			stopLoad()
			return nil, err
		}
		time.Sleep(cfg.Interval)
	}
	settle("every pod left the cell", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(removedAt) >= cfg.Pods
	})
	time.Sleep(time.Second) // in-flight requests arrive; none may start later
	stopLoad()

	rep := &Report{Pods: cfg.Pods, Requests: requests(), Failed: failed()}
	var r2r, r2f, d2r, d2l []float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	mu.Lock()
	for _, s := range sims[1:] {
		first, last := s.times()
		ready, del := readyAt[s.name], deletedAt[s.name]
		if t := routableAt[s.name]; !t.IsZero() {
			r2r = append(r2r, ms(t.Sub(ready)))
		}
		if !first.IsZero() {
			r2f = append(r2f, ms(first.Sub(ready)))
		}
		if t := removedAt[s.name]; !t.IsZero() {
			d2r = append(d2r, ms(t.Sub(del)))
		}
		if !last.IsZero() {
			d2l = append(d2l, max(0, ms(last.Sub(del))))
		}
	}
	mu.Unlock()
	rep.ReadyToRoutable, rep.ReadyToFirstRequest = dist(r2r), dist(r2f)
	rep.DeleteToRemoved, rep.DeleteToLastRequest = dist(d2r), dist(d2l)
	return rep, nil
}

func dist(v []float64) Dist {
	slices.Sort(v)
	if len(v) == 0 {
		return Dist{}
	}
	return Dist{N: len(v), P50: report.Percentile(v, 50), P99: report.Percentile(v, 99), Max: v[len(v)-1]}
}

// startLoad sends completions with distinct prompts (no prefix reuse: the
// load balance decides, so a new pod is picked as soon as it is routable)
// from workers goroutines; stop stops them and waits.
func startLoad(url string, workers int) (requests, failed func() int64, stop func()) {
	var n, f int64
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				body, _ := json.Marshal(map[string]any{"model": "m", "prompt": fmt.Sprintf("request %d of worker %d", i, w), "max_tokens": 1})
				resp, err := client.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
				ok := err == nil && resp.StatusCode == 200
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mu.Lock()
				n++
				if !ok {
					f++
				}
				mu.Unlock()
			}
		}()
	}
	var once sync.Once
	return func() int64 { mu.Lock(); defer mu.Unlock(); return n },
		func() int64 { mu.Lock(); defer mu.Unlock(); return f },
		func() { once.Do(func() { close(done); wg.Wait() }) }
}
