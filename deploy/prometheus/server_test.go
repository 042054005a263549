package prometheus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cellrouter/cellrouter/loadtest/fleet"
)

// moduleAnnotations reads the prometheus.io annotations an OpenTofu module
// puts on its pods (local.scrape_annotations in main.tf) and checks that
// the pod template carries them.
func moduleAnnotations(t *testing.T, module string) map[string]string {
	t.Helper()
	file := filepath.Join("..", "terraform", "modules", module, "main.tf")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	if !regexp.MustCompile(`var\.prometheus_scrape \? local\.scrape_annotations : \{\}`).MatchString(src) {
		t.Fatalf("%s: the pod template does not carry local.scrape_annotations", file)
	}
	block := regexp.MustCompile(`(?s)scrape_annotations = \{(.*?)\}`).FindStringSubmatch(src)
	if block == nil {
		t.Fatalf("%s: no scrape_annotations", file)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`"prometheus\.io/(\w+)"\s*=\s*(.+)`).FindAllStringSubmatch(block[1], -1) {
		out[m[1]] = strings.TrimSpace(m[2])
	}
	if out["scrape"] != `"true"` || out["port"] != "tostring(var.ports.http)" || out["path"] == "" {
		t.Fatalf("%s: scrape annotations %v, want scrape \"true\", port the http port and a path", file, out)
	}
	out["path"], _ = strconv.Unquote(out["path"])
	return out
}

// scrapeConfig turns prometheus.yml into what the test runs: the same
// jobs and relabelling, with the Kubernetes pod discovery replaced by a
// file of targets that carry the labels that discovery would give the
// modules' pods, a scrape and evaluation every second, and the rules by
// absolute path.
func scrapeConfig(t *testing.T, dir, targetsFile string) string {
	t.Helper()
	b, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	cfg["global"] = map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"}
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg["rule_files"] = []string{rules}
	jobs, _ := cfg["scrape_configs"].([]any)
	if len(jobs) != 1 {
		t.Fatalf("prometheus.yml: %d scrape_configs, want the one cellrouter-pods job", len(jobs))
	}
	job := jobs[0].(map[string]any)
	if _, ok := job["kubernetes_sd_configs"]; !ok {
		t.Fatal("prometheus.yml: the job does not discover Kubernetes pods")
	}
	delete(job, "kubernetes_sd_configs")
	job["file_sd_configs"] = []any{map[string]any{"files": []string{targetsFile}, "refresh_interval": "1s"}}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// podTargets are the file_sd target groups that stand for the fleet's
// daemons as Kubernetes pods of the modules: the pod's address (on a port
// the relabelling must replace with the annotated one), its labels and its
// annotations, the port annotation being the daemon's real HTTP port.
func podTargets(t *testing.T, f *fleet.Fleet) []map[string]any {
	t.Helper()
	var out []map[string]any
	add := func(component, module, name, httpAddr string) {
		ann := moduleAnnotations(t, module)
		host, port, err := net.SplitHostPort(httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, map[string]any{
			"targets": []string{host + ":1"},
			"labels": map[string]string{
				"__meta_kubernetes_namespace":                                "demo",
				"__meta_kubernetes_pod_name":                                 name,
				"__meta_kubernetes_pod_label_app_kubernetes_io_part_of":      "cellrouter",
				"__meta_kubernetes_pod_label_app_kubernetes_io_component":    component,
				"__meta_kubernetes_pod_annotation_prometheus_io_scrape":      "true",
				"__meta_kubernetes_pod_annotation_prometheus_io_port":        port,
				"__meta_kubernetes_pod_annotation_prometheus_io_path":        ann["path"],
				"__meta_kubernetes_pod_annotationpresent_prometheus_io_port": "true",
			},
		})
	}
	add("global", "global", "globald-0", f.Global.HTTPAddr())
	for i, c := range f.Cells {
		add("cell", "cell", fmt.Sprintf("cell-%d-0", i), c.HTTPAddr())
	}
	return out
}

// freePort returns a port on 127.0.0.1 nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// apiGet queries the Prometheus HTTP API and decodes its data.
func apiGet(base, path string, data any) error {
	resp, err := http.Get(base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s", path, body.Error)
	}
	return json.Unmarshal(body.Data, data)
}

// eventually polls cond every 200ms until it returns nil or the deadline
// passes, and fails with its last error.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPrometheusScrapesDemoFleet runs a real Prometheus with the scrape
// configuration the modules' annotations imply (prometheus.yml's
// relabelling, the pods stood for by a file of targets) and the rules,
// against the demo fleet under a trickle of traffic: every daemon is
// scraped up under its job, every rule evaluates without error, and every
// recording rule produces finite values.
func TestPrometheusScrapesDemoFleet(t *testing.T) {
	bin := tool(t, "prometheus")
	f := startDemo(t)
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets.json")
	tb, _ := json.Marshal(podTargets(t, f))
	if err := os.WriteFile(targets, tb, 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := scrapeConfig(t, dir, targets)
	if promtool, err := exec.LookPath("promtool"); err == nil {
		if out, err := exec.Command(promtool, "check", "config", cfgFile).CombinedOutput(); err != nil {
			t.Fatalf("promtool check config: %v\n%s", err, out)
		}
	}

	addr := freePort(t)
	var log bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", log.String())
		}
	}()
	base := "http://" + addr

	// Every daemon is discovered, relabelled onto its annotated port and
	// path, and scraped up.
	eventually(t, "targets up", 60*time.Second, func() error {
		var data struct {
			ActiveTargets []struct {
				Labels    map[string]string `json:"labels"`
				ScrapeURL string            `json:"scrapeUrl"`
				Health    string            `json:"health"`
				LastError string            `json:"lastError"`
			} `json:"activeTargets"`
		}
		if err := apiGet(base, "/api/v1/targets", &data); err != nil {
			return err
		}
		jobs := map[string]int{}
		for _, tg := range data.ActiveTargets {
			if tg.Health != "up" {
				return fmt.Errorf("%s is %s: %s", tg.ScrapeURL, tg.Health, tg.LastError)
			}
			if !strings.HasSuffix(tg.ScrapeURL, "/metrics") || strings.HasSuffix(tg.Labels["instance"], ":1") {
				return fmt.Errorf("scraped at %s (instance %s): the annotations' port and path were not applied", tg.ScrapeURL, tg.Labels["instance"])
			}
			jobs[tg.Labels["job"]]++
		}
		if jobs["cellrouter-global"] != 1 || jobs["cellrouter-cell"] != len(f.Cells) {
			return fmt.Errorf("up targets by job %v, want 1 cellrouter-global and %d cellrouter-cell", jobs, len(f.Cells))
		}
		return nil
	})

	// Traffic while Prometheus watches, so the rates are not zero: the
	// same prompts through the global tier (hits), and a new one to each
	// cell (KV events, hence events lag, in every cell).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			n++
			if err := errors.Join(sendTraffic(f, fleet.DefaultConfig(), 1), sendFresh(f, fleet.DefaultConfig(), n)); err != nil {
				t.Errorf("traffic: %v", err)
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			eventually(t, "recording rule "+r.Record, 60*time.Second, func() error {
				var data struct {
					Result []struct {
						Metric map[string]string `json:"metric"`
						Value  [2]any            `json:"value"`
					} `json:"result"`
				}
				if err := apiGet(base, "/api/v1/query?query="+url.QueryEscape(r.Record), &data); err != nil {
					return err
				}
				if len(data.Result) == 0 {
					return fmt.Errorf("no series")
				}
				for _, s := range data.Result {
					v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
					if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
						return fmt.Errorf("%v = %v", s.Metric, s.Value[1])
					}
				}
				return nil
			})
		}
	}

	var rules struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := apiGet(base, "/api/v1/rules", &rules); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				t.Errorf("rule %s: health %q: %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	if want := len(flatRules(loadRules(t))); n != want {
		t.Errorf("Prometheus loaded %d rules, want %d", n, want)
	}
}

// flatRules lists the names of the rules of every group.
func flatRules(g ruleGroups) []string {
	var out []string
	for _, gr := range g.Groups {
		for _, r := range gr.Rules {
			out = append(out, r.Record+r.Alert)
		}
	}
	return out
}
