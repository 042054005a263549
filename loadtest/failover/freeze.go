package failover

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"
)

// sampleAt returns the value of the sample key in the /metrics of the
// process at host:port, or -1 when it is missing or the process does not
// answer (a frozen one).
func (f *fleet) sampleAt(hostport, key string) float64 {
	resp, err := f.client.Get("http://" + hostport + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return -1
	}
	return sample(string(body), key)
}

// freeze stops p with SIGSTOP, waits until ctx ends or d passed, and
// resumes it with SIGCONT (whatever happened), returning when it resumed.
func freeze(ctx context.Context, p *proc, d time.Duration) (stopped bool, resumed time.Time) {
	if p.signal(syscall.SIGSTOP) != nil {
		return false, time.Time{}
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	p.signal(syscall.SIGCONT)
	return true, time.Now()
}

// freezeCellReplica stops the first replica of cell 0 for FreezeFor.
// Detected: every other globald took it out of its hand-offs, by gossip (one
// endpoint fewer) or by ejecting it; ready: after SIGCONT, it answers
// /readyz and every globald lists it again.
func freezeCellReplica(ctx context.Context, cfg Config, f *fleet, inj *injection) {
	r := f.replicasOf(0)[0]
	R := cfg.ReplicasPerCell
	inj.target = fmt.Sprintf("cell-%d/%s", r.cell, r.id)
	inj.at = time.Now()
	detected := make(chan time.Time, 1)
	go func() {
		detected <- poll(ctx, cfg.FreezeFor, func() bool {
			return allGlobals(f, func(g *globalProc) bool {
				return f.endpoints(g, r.cell) == R-1 || f.sampleAt(g.http, "cellrouter_global_handoff_ejected") >= 1
			})
		})
	}()
	stopped, resumed := freeze(ctx, r.p, cfg.FreezeFor)
	inj.detected = <-detected
	if !stopped {
		return
	}
	inj.restarted = resumed
	inj.ready = poll(ctx, cfg.StartTimeout, func() bool {
		return f.ok("http://"+r.http+"/readyz") && allGlobals(f, func(g *globalProc) bool { return f.endpoints(g, r.cell) == R })
	})
}

// freezePod stops the first pod of cell 0 for FreezeFor. Detected: every
// replica of its cell took it out of its candidates (marked dead by its
// health checks, or ejected); ready: after SIGCONT, every replica has it
// ready again.
func freezePod(ctx context.Context, cfg Config, f *fleet, inj *injection) {
	pd := f.pods[0]
	inj.target = pd.id
	inj.at = time.Now()
	out := func() bool {
		for _, r := range f.replicasOf(pd.cell) {
			if !r.p.running() {
				continue
			}
			ejected := f.sampleAt(r.http, fmt.Sprintf(`cellrouter_upstream_ejected{cell="cell-%d"}`, pd.cell)) >= 1
			if f.podState(r, pd.id) != "POD_STATE_DEAD" && !ejected {
				return false
			}
		}
		return true
	}
	detected := make(chan time.Time, 1)
	go func() { detected <- poll(ctx, cfg.FreezeFor, out) }()
	stopped, resumed := freeze(ctx, pd.p, cfg.FreezeFor)
	inj.detected = <-detected
	if !stopped {
		return
	}
	inj.restarted = resumed
	inj.ready = poll(ctx, cfg.StartTimeout, func() bool {
		for _, r := range f.replicasOf(pd.cell) {
			if r.p.running() && f.podState(r, pd.id) != "POD_STATE_READY" {
				return false
			}
		}
		return true
	})
}
