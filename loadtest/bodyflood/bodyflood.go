package bodyflood

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// Config is one flood.
type Config struct {
	// Globald is the globald binary to start.
	Globald string
	// Args are extra flags for globald (limits, for one).
	Args []string
	// Concurrency is how many requests are sent at once.
	Concurrency int
	// BodyBytes is the size of each request body.
	BodyBytes int
	// Settle is how long after the flood the resident memory is read again.
	Settle time.Duration
	// Timeout bounds the whole run.
	Timeout time.Duration
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// DefaultConfig is issue 22's flood: 24 bodies of 30 MB at once.
func DefaultConfig() Config {
	return Config{Concurrency: 24, BodyBytes: 30_000_000, Settle: 5 * time.Second, Timeout: 5 * time.Minute}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Globald == "":
		return errors.New("bodyflood: Globald (--globald) must name a globald binary")
	case c.Concurrency < 1:
		return fmt.Errorf("bodyflood: Concurrency = %d: want at least 1", c.Concurrency)
	case c.BodyBytes < 64:
		return fmt.Errorf("bodyflood: BodyBytes = %d: want at least 64", c.BodyBytes)
	case c.Settle < 0 || c.Timeout <= 0:
		return fmt.Errorf("bodyflood: Settle = %v, Timeout = %v: want Settle >= 0, Timeout > 0", c.Settle, c.Timeout)
	}
	return nil
}

// Report is what one flood measured.
type Report struct {
	// Globald is the binary measured and Args its extra flags.
	Globald string   `json:"globald"`
	Args    []string `json:"args,omitempty"`
	// Concurrency and BodyBytes describe the flood.
	Concurrency int `json:"concurrency"`
	BodyBytes   int `json:"body_bytes"`
	// Statuses counts the answers by HTTP status and OpenAI error code
	// ("503 server_overloaded"; "error" for a transport error).
	Statuses map[string]int `json:"statuses"`
	// RSSBeforeBytes, PeakRSSBytes (VmHWM) and RSSAfterBytes are the
	// process's resident memory before the flood, at its peak, and Settle
	// after the flood.
	RSSBeforeBytes int64 `json:"rss_before_bytes"`
	PeakRSSBytes   int64 `json:"peak_rss_bytes"`
	RSSAfterBytes  int64 `json:"rss_after_bytes"`
	// FloodSeconds is the time from the first request to the last answer.
	FloodSeconds float64 `json:"flood_seconds"`
}

// Run starts globald, floods it and stops it.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "bodyflood")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	const key = "bodyflood-key"
	keyFile := filepath.Join(dir, "keys.yaml")
	kf := "tenants:\n  - {name: flood}\nkeys:\n  - {sha256: " + auth.HashKey(key).String() + ", tenant: flood, scopes: [inference]}\n"
	if err := os.WriteFile(keyFile, []byte(kf), 0o600); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	httpAddr := "127.0.0.1:" + ports[0]
	args := append([]string{"--api-keys", keyFile, "--http-addr", httpAddr, "--grpc-addr", "127.0.0.1:" + ports[1],
		"--gossip-bind", "127.0.0.1:" + ports[2], "--log-level", "error"}, cfg.Args...)
	cmd := exec.Command(cfg.Globald, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bodyflood: start %s: %w", cfg.Globald, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	base := "http://" + httpAddr
	if err := waitHealthy(ctx, base, exited); err != nil {
		return nil, fmt.Errorf("%w (stderr: %s)", err, stderr.String())
	}
	pid := cmd.Process.Pid
	rep := &Report{Globald: cfg.Globald, Args: cfg.Args, Concurrency: cfg.Concurrency, BodyBytes: cfg.BodyBytes, Statuses: map[string]int{}}
	if rep.RSSBeforeBytes, err = procStatus(pid, "VmRSS"); err != nil {
		return nil, err
	}
	fmt.Fprintf(logw, "bodyflood: globald pid %d at %s, RSS %d MB; sending %d bodies of %d bytes\n", pid, base, rep.RSSBeforeBytes>>20, cfg.Concurrency, cfg.BodyBytes)
	body := chatBody(cfg.BodyBytes)
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status := send(ctx, cl, base+"/v1/chat/completions", key, body)
			mu.Lock()
			rep.Statuses[status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	rep.FloodSeconds = time.Since(start).Seconds()
	if rep.PeakRSSBytes, err = procStatus(pid, "VmHWM"); err != nil {
		return nil, err
	}
	select {
	case <-time.After(cfg.Settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if rep.RSSAfterBytes, err = procStatus(pid, "VmRSS"); err != nil {
		return nil, err
	}
	fmt.Fprintf(logw, "bodyflood: answers %v, peak RSS %d MB, %v later %d MB\n", rep.Statuses, rep.PeakRSSBytes>>20, cfg.Settle, rep.RSSAfterBytes>>20)
	return rep, nil
}

// send posts one body and returns the answer's status and error code, or
// "error".
func send(ctx context.Context, cl *http.Client, url, key string, body []byte) string {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return "error"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := cl.Do(req)
	if err != nil {
		return "error"
	}
	defer resp.Body.Close()
	var eb struct {
		Error *struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	status := strconv.Itoa(resp.StatusCode)
	if json.Unmarshal(data, &eb) == nil && eb.Error != nil && len(eb.Error.Code) > 0 {
		status += " " + strings.Trim(string(eb.Error.Code), `"`)
	}
	return status
}

// chatBody is a chat request of about size bytes: one user message of
// words.
func chatBody(size int) []byte {
	const head, tail = `{"model":"flood","max_tokens":1,"messages":[{"role":"user","content":"`, `"}]}`
	b := make([]byte, 0, size)
	b = append(b, head...)
	words := []string{"the ", "cache ", "router ", "sends ", "every ", "prompt ", "home "}
	for i := 0; len(b) < size-len(tail)-8; i++ {
		b = append(b, words[i%len(words)]...)
	}
	return append(b, tail...)
}

// waitHealthy polls /healthz until it answers, the process exits or ctx
// ends.
func waitHealthy(ctx context.Context, base string, exited <-chan error) error {
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("bodyflood: globald exited before it served: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("bodyflood: globald not healthy: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// procStatus reads a "kB" field of /proc/PID/status in bytes.
func procStatus(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("bodyflood: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bodyflood: %s %q: %w", field, rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("bodyflood: no %s in /proc/%d/status", field, pid)
}

// freePorts returns n distinct loopback ports free at the time of the
// call.
func freePorts(n int) ([]string, error) {
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		_, port, _ := net.SplitHostPort(l.Addr().String())
		out = append(out, port)
	}
	return out, nil
}
