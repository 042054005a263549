package prometheus

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/fleet"
)

// demo is the demo fleet (loadtest/fleet) the tests of this directory
// start once: two cells of two simulated pods, plain HTTP (the secure
// fleet's cells take mutual TLS only), with some traffic sent through the
// global endpoint so that labelled counters and histograms have series.
var demo struct {
	once sync.Once
	f    *fleet.Fleet
	err  error
}

// startDemo returns the running demo fleet, starting it on first use. It
// is closed by TestMain.
func startDemo(t *testing.T) *fleet.Fleet {
	t.Helper()
	demo.once.Do(func() {
		cfg := fleet.DefaultConfig()
		cfg.PodsPerCell = 2
		cfg.Pod.TimeScale = 0
		cfg.SummaryInterval = 100 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if demo.f, demo.err = fleet.Start(ctx, cfg); demo.err != nil {
			return
		}
		demo.err = sendTraffic(demo.f, cfg, 4)
	})
	if demo.err != nil {
		t.Fatalf("demo fleet: %v", demo.err)
	}
	return demo.f
}

// sendTraffic sends token, text and chat prompts through the global
// endpoint, rounds times, so that the repeats find their prefix cached.
func sendTraffic(f *fleet.Fleet, cfg fleet.Config, rounds int) error {
	prompt := make([]int, 256)
	for i := range prompt {
		prompt[i] = 1000 + i
	}
	bodies := []map[string]any{
		{"model": cfg.Pod.Model, "prompt": prompt, "max_tokens": 4},
		{"model": cfg.Pod.Model, "prompt": strings.Repeat("the cell routes to the pod that holds the prefix ", 20), "max_tokens": 4},
		{"model": cfg.Pod.Model, "messages": []map[string]string{{"role": "user", "content": strings.Repeat("explain the decision ", 30)}}, "max_tokens": 4},
	}
	for round := 0; round < rounds; round++ {
		for _, b := range bodies {
			path := "/v1/completions"
			if _, chat := b["messages"]; chat {
				path = "/v1/chat/completions"
			}
			body, _ := json.Marshal(b)
			resp, err := http.Post(f.Endpoint()+path, "application/json", strings.NewReader(string(body)))
			if err != nil {
				return err
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("POST %s: status %d: %s", path, resp.StatusCode, out)
			}
		}
		// Let the pods' KV events reach the cells and the summaries the
		// global tier, so the next round is routed by summary.
		time.Sleep(150 * time.Millisecond)
	}
	return nil
}

// sendFresh sends each cell directly a prompt none of its pods has seen
// (n makes it unique), so that every cell applies new KV events.
func sendFresh(f *fleet.Fleet, cfg fleet.Config, n int) error {
	for i, c := range f.Cells {
		prompt := make([]int, 64)
		for j := range prompt {
			prompt[j] = 5000 + n*1000 + i*100 + j
		}
		body, _ := json.Marshal(map[string]any{"model": cfg.Pod.Model, "prompt": prompt, "max_tokens": 2})
		resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/completions", "application/json", strings.NewReader(string(body)))
		if err != nil {
			return err
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST %s/v1/completions: status %d: %s", c.HTTPAddr(), resp.StatusCode, out)
		}
	}
	return nil
}

// metricsTargets are the host:port of every daemon's HTTP server (where
// /metrics is), by job: the global tier's and each cell's.
func metricsTargets(f *fleet.Fleet) map[string][]string {
	out := map[string][]string{"globald": {f.Global.HTTPAddr()}}
	for _, c := range f.Cells {
		out["celld"] = append(out["celld"], c.HTTPAddr())
	}
	return out
}

// scrapeNames scrapes every daemon of the fleet and returns the names of
// the series they export: each family's name, and a histogram's _bucket,
// _sum and _count (a summary's _sum and _count).
func scrapeNames(t *testing.T, f *fleet.Fleet) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, addrs := range metricsTargets(f) {
		for _, a := range addrs {
			resp, err := http.Get("http://" + a + "/metrics")
			if err != nil {
				t.Fatalf("scrape %s: %v", a, err)
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				t.Fatalf("scrape %s: status %d", a, resp.StatusCode)
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				rest, ok := strings.CutPrefix(line, "# TYPE ")
				if !ok {
					continue
				}
				name, typ, _ := strings.Cut(rest, " ")
				names[name] = true
				// A histogram's and a summary's series are named after
				// the family with these suffixes.
				switch typ {
				case "histogram":
					names[name+"_bucket"] = true
					fallthrough
				case "summary":
					names[name+"_sum"], names[name+"_count"] = true, true
				}
			}
			resp.Body.Close()
			if err := sc.Err(); err != nil {
				t.Fatalf("scrape %s: %v", a, err)
			}
		}
	}
	return names
}
