package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// proc is one child process the suite started: its command line is kept
// so it can be restarted at the same addresses.
type proc struct {
	name string
	bin  string
	args []string
	logs string // directory of the log files

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current run exited
	runs int
}

// start runs the process (again); its output is appended to
// <logs>/<name>.log.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("failover: %s is already running", p.name)
		}
	}
	f, err := os.OpenFile(filepath.Join(p.logs, p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("failover: %s: log: %w", p.name, err)
	}
	p.runs++
	fmt.Fprintf(f, "---- start %d: %s %v\n", p.runs, p.bin, p.args)
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("failover: start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		f.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// running reports whether the current run has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the current run.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("failover: %s is not running", p.name)
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("failover: signal %s: %w", p.name, err)
	}
	return nil
}

// wait waits up to d for the current run to exit and reports whether it did.
func (p *proc) wait(d time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// kill sends SIGKILL and waits (bounded) for the exit.
func (p *proc) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !p.wait(10 * time.Second) {
		return fmt.Errorf("failover: %s did not exit after SIGKILL", p.name)
	}
	return nil
}

// stop ends the current run: SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	p.signal(syscall.SIGTERM)
	p.signal(syscall.SIGCONT) // a frozen process handles its SIGTERM only once resumed
	if !p.wait(grace) {
		p.signal(syscall.SIGKILL)
		p.wait(10 * time.Second)
	}
}

// procs is every process of a fleet, stopped together.
type procs struct {
	mu   sync.Mutex
	list []*proc
}

func (ps *procs) add(p *proc) *proc {
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	return p
}

// stopAll stops every process in parallel, each within grace plus the
// SIGKILL wait.
func (ps *procs) stopAll(grace time.Duration) {
	ps.mu.Lock()
	list := append([]*proc(nil), ps.list...)
	ps.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range list {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(grace) }()
	}
	wg.Wait()
}

// buildBinaries builds celld, globald and loadtest into dir with the go
// tool (from the module that holds the working directory).
func buildBinaries(ctx context.Context, dir string, log io.Writer) error {
	for _, b := range []string{"celld", "globald", "loadtest"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, b), "github.com/cellrouter/cellrouter/cmd/"+b)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("failover: go build %s: %w (run from inside the cellrouter module, or pass --bin-dir)", b, err)
		}
	}
	return nil
}
