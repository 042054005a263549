package discovery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/cell/discovery"
	"github.com/cellrouter/cellrouter/cell/discovery/kubetest"
	"github.com/cellrouter/cellrouter/cell/podset"
	"github.com/cellrouter/cellrouter/loadtest/enginesim"
)

const simModel = "m"

// simPod is one simulated engine pod at its own loopback IP: HTTP on
// :8000, KV events on :5557, replay on :5558. It records the pod set
// version each request it received was sent under.
type simPod struct {
	name, ip string
	pod      *enginesim.Pod
	srv      *http.Server
	done     chan struct{}

	mu       sync.Mutex
	versions []uint64
	last     time.Time
}

func startSim(t testing.TB, name, ip string) *simPod {
	t.Helper()
	cfg := enginesim.DefaultConfig()
	cfg.ID, cfg.Model, cfg.HTTPAddr, cfg.TimeScale = name, simModel, "", 0.05
	cfg.Events.Endpoint, cfg.Events.ReplayEndpoint = "tcp://"+ip+":5557", "tcp://"+ip+":5558"
	cfg.Logger = slog.New(slog.DiscardHandler)
	pod, err := enginesim.NewPod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "8000"))
	if err != nil {
		pod.Close()
		t.Fatal(err)
	}
	s := &simPod{name: name, ip: ip, pod: pod, done: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get(cell.PodSetVersionHeader); v != "" {
			n, _ := strconv.ParseUint(v, 10, 64)
			s.mu.Lock()
			s.versions = append(s.versions, n)
			s.last = time.Now()
			s.mu.Unlock()
		}
		pod.Handler().ServeHTTP(w, r)
	})}
	go func() { defer close(s.done); _ = s.srv.Serve(ln) }()
	return s
}

// stop shuts the pod down gracefully: in-flight requests finish.
func (s *simPod) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
	s.pod.Close()
}

func (s *simPod) received() (n int, versions []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.versions), append([]uint64(nil), s.versions...)
}

// testCell runs a cell that discovers app=sim pods in ns.
type testCell struct {
	c      *cell.Cell
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// gone is, per pod, the first pod set version in which it was not
	// routable (or absent), once it had been routable.
	gone     map[string]uint64
	routable map[string]bool
}

func startCell(t testing.TB, p *kubetest.Plane, ns string) *testCell {
	t.Helper()
	cfg := cell.DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Events.DefaultModel = simModel
	cfg.Speculative.TTL = 0
	cfg.HealthInterval = time.Second
	kc := discovery.DefaultKubernetesConfig()
	kc.Enabled, kc.Kubeconfig, kc.Namespace, kc.Selector = true, p.Kubeconfig, ns, "app=sim"
	cfg.Discovery.Kubernetes = kc
	c, err := cell.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tc := &testCell{c: c, cancel: cancel, done: make(chan struct{}), gone: map[string]uint64{}, routable: map[string]bool{}}
	changes, unsub := c.PodSet().Subscribe()
	go func() { defer close(tc.done); _ = c.Run(ctx) }()
	go func() {
		defer unsub()
		for {
			tc.observe(c.PodSet().Load())
			select {
			case <-ctx.Done():
				return
			case <-changes:
			}
		}
	}()
	t.Cleanup(tc.stop)
	eventually(t, time.Minute, "cell ready", func() (bool, string) {
		resp, err := http.Get("http://" + c.HTTPAddr() + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return tc
}

func (tc *testCell) stop() {
	tc.cancel()
	<-tc.done
}

// observe records when each pod stopped being routable.
func (tc *testCell) observe(s *podset.Snapshot) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for id, was := range tc.routable {
		if was && !s.Routable(id) {
			if _, ok := tc.gone[id]; !ok {
				tc.gone[id] = s.Version
			}
		}
	}
	for _, p := range s.Pods {
		if p.Routable {
			if !tc.routable[p.ID] {
				delete(tc.gone, p.ID) // a new life
			}
			tc.routable[p.ID] = true
		}
	}
	for id := range tc.routable {
		if !s.Routable(id) {
			tc.routable[id] = false
		}
	}
}

// goneAt returns the version in which pod stopped being routable.
func (tc *testCell) goneAt(pod string) (uint64, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	v, ok := tc.gone[pod]
	return v, ok
}

// load sends completions to the cell from workers goroutines until stopped.
type load struct {
	url            string
	ok, failed     atomic.Int64
	stopc          chan struct{}
	wg             sync.WaitGroup
	mu             sync.Mutex
	firstFailure   string
	requireSuccess atomic.Bool
}

func startLoad(url string, workers int) *load {
	l := &load{url: url, stopc: make(chan struct{})}
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stopc:
					return
				default:
				}
				prompt := fmt.Sprintf("system prompt %d: tell a story about the number %d in many words so that it spans blocks", (w+i)%16, i%64)
				body, _ := json.Marshal(map[string]any{"model": simModel, "prompt": prompt, "max_tokens": 4})
				resp, err := client.Post(l.url+"/v1/completions", "application/json", bytes.NewReader(body))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err == nil && resp.StatusCode == 200 {
					l.ok.Add(1)
					continue
				}
				l.failed.Add(1)
				l.mu.Lock()
				if l.firstFailure == "" {
					if err != nil {
						l.firstFailure = err.Error()
					} else {
						l.firstFailure = resp.Status
					}
				}
				l.mu.Unlock()
				time.Sleep(10 * time.Millisecond) // no routable pod: do not spin
			}
		}()
	}
	return l
}

func (l *load) stop() {
	close(l.stopc)
	l.wg.Wait()
}

// checkNoLateRequests fails if pod received a request under a pod set
// version at or after the one in which the cell saw it stop being
// routable. The test's observer follows the pod set in its own goroutine,
// so it is given a while to see the pod go (the cell may have, a moment
// before the caller looked).
func checkNoLateRequests(t *testing.T, tc *testCell, s *simPod) {
	t.Helper()
	gone, ok := tc.goneAt(s.name)
	for deadline := time.Now().Add(30 * time.Second); !ok && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		gone, ok = tc.goneAt(s.name)
	}
	if !ok {
		t.Errorf("%s: the cell never saw it stop being routable", s.name)
		return
	}
	_, versions := s.received()
	for _, v := range versions {
		if v >= gone {
			t.Errorf("%s: got a request sent under pod set version %d, after the cell saw it go at version %d", s.name, v, gone)
			return
		}
	}
}
