//go:build linux

package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// procState returns the state letter of process pid from /proc (R, S, T...).
func procState(t *testing.T, pid int) byte {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ...: comm may hold spaces, so take what follows
	// the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		t.Fatalf("unexpected /proc stat %q", s)
	}
	return s[i+2]
}

// childEnv makes the test binary a tiny streaming pod (see TestMain).
const childEnv = "CELLROUTER_PROXY_TEST_POD"

// TestMain runs the test binary as a pod when childEnv is set: it serves
// streamingPod on 127.0.0.1, prints its address and exits when its stdin
// closes (the parent ended).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		os.Exit(m.Run())
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(lis.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = http.Serve(lis, streamingPod(nil, nil))
	os.Exit(0)
}

// startChildPod re-executes the test binary as a pod process and returns it
// and its address; cleanup resumes and kills it.
func startChildPod(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case addr := <-line:
		if addr == "" {
			t.Fatal("the child pod printed no address")
		}
		return cmd, addr
	case <-time.After(waitTimeout):
		t.Fatal("the child pod did not start")
	}
	return nil, ""
}

func TestSIGSTOPPedPodIsRetriedEjectedAndReadmitted(t *testing.T) {
	const bound = 300 * time.Millisecond
	child, childAddr := startChildPod(t)
	var goodHits atomic.Int64
	good := NewFreezable(t, streamingPod(t, &goodHits))
	p := testProxy(t, watchConfig(bound, 5*time.Second))
	targets := []Target{{Pod: "child", Address: childAddr}, {Pod: "good", Address: good.Addr()}}
	var log callLog
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, targets, log.hooks())
	})
	call := func() (time.Duration, string) {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		start := time.Now()
		resp, err := post(ctx, f.URL+"/v1/completions", `{"stream":true}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := f.nextErr(t); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d, err %v, body %q", resp.StatusCode, err, data)
		}
		_, done, _ := log.snapshot()
		return time.Since(start), log.doneAt[len(done)-1].Pod
	}
	if _, pod := call(); pod != "child" {
		t.Fatalf("the running child did not serve the first call (%s did)", pod)
	}
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The signal is delivered asynchronously: wait until the kernel says
	// the process is stopped.
	deadline := time.Now().Add(waitTimeout)
	for procState(t, child.Process.Pid) != 'T' {
		if time.Now().After(deadline) {
			t.Fatal("the child did not stop after SIGSTOP")
		}
		time.Sleep(5 * time.Millisecond)
	}
	took, pod := call()
	if pod != "good" || took > 2*bound+3*time.Second {
		t.Fatalf("with the child stopped: served by %s after %v, want the good pod within bound + liveness + one retry", pod, took)
	}
	if !p.Ejected(childAddr) {
		t.Fatal("the stopped child was not ejected")
	}
	if _, pod := call(); pod != "good" || p.WatchStats().FirstByteTimeouts != 1 {
		t.Fatalf("next call served by %s, stats %+v: the ejected child was waited for again", pod, p.WatchStats())
	}
	if events, _, _ := log.snapshot(); events[len(events)-3] != "attempt good" {
		t.Fatalf("next call's events %v: the ejected child was tried first", events[len(events)-3:])
	}
	if err := child.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(waitTimeout)
	for p.Ejected(childAddr) {
		if time.Now().After(deadline) {
			t.Fatalf("the resumed child was not readmitted: %+v", p.WatchStats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, pod := call(); pod != "child" {
		t.Fatalf("the readmitted child did not serve (%s did)", pod)
	}
}
