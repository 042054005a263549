package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
	"github.com/cellrouter/cellrouter/internal/telemetry/otlptest"
	"github.com/cellrouter/cellrouter/loadtest/fleet"
)

// waitMatch polls w until re matches, and returns the first submatch.
func waitMatch(t *testing.T, w *servertest.LogBuffer, re *regexp.Regexp, errc <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(w.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-errc:
			t.Fatalf("run returned %v before printing %s; output:\n%s", err, re, w)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("timed out waiting for %s; output:\n%s", re, w)
	return ""
}

// startRun runs the command with args in the background; the returned
// function stops it and returns run's error.
func startRun(t *testing.T, args ...string) (out, logs *servertest.LogBuffer, errc chan error, stop func() error) {
	out, logs, errc = &servertest.LogBuffer{}, &servertest.LogBuffer{}, make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { errc <- run(ctx, args, out, logs) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-errc:
			return err
		case <-time.After(60 * time.Second):
			t.Fatal("run did not return after cancel")
			return nil
		}
	}
	t.Cleanup(func() { stop() })
	return out, logs, errc, stop
}

// TestRunStartsAndExportsWithOTLPEndpoint is the regression test of
// globald exiting at start whenever OTEL_EXPORTER_OTLP_ENDPOINT was set
// ("conflicting Schema URL"): it starts, serves, and exports its spans
// under its own identity.
func TestRunStartsAndExportsWithOTLPEndpoint(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	_, logs, errc, stop := startRun(t, "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0", "--gossip-bind", "127.0.0.1:0")
	addr := waitMatch(t, logs, regexp.MustCompile(`"globald serving" http=(\S+)`), errc)
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":[1,2,3]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d with no cell, want 503", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatalf("run: %v; logs:\n%s", err, logs)
	}
	for _, s := range rcv.Spans() {
		if s.Name == "global.request" {
			if s.Service() != "globald" || s.Instance() != "global/"+addr || !s.Error {
				t.Errorf("global.request of %s %s (error %v), want globald global/%s, an error", s.Service(), s.Instance(), s.Error, addr)
			}
			return
		}
	}
	t.Fatalf("no global.request span exported; got %d spans", len(rcv.Spans()))
}

// TestDemoExportsOneTraceAcrossTheFleet runs globald --demo as a user
// would, with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an in-process OTLP
// receiver, and sends a prompt twice: the second time, once the cells'
// summaries know it, the global tier probes the cells. That request must
// be one trace, with the client's trace id, spanning globald (request,
// summary lookup, probes, hand-off) and the serving cell (request, stages,
// upstream call to the pod), each part under its own identity.
func TestDemoExportsOneTraceAcrossTheFleet(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	out, logs, errc, stop := startRun(t, "--demo", "--demo-pods", "2", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0", "--log-level", "warn")
	endpoint := waitMatch(t, out, regexp.MustCompile(`behind (http://\S+)`), errc)
	key := waitMatch(t, out, regexp.MustCompile(`export CELLROUTER_API_KEY=(\S+)`), errc)

	model := fleet.DefaultConfig().Pod.Model
	prompt := make([]int, 256)
	for i := range prompt {
		prompt[i] = 3000 + i
	}
	post := func(path string, body any, traceparent string) (*http.Response, []byte) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, endpoint+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d %s", path, resp.StatusCode, rb)
		}
		return resp, rb
	}
	completion := map[string]any{"model": model, "prompt": prompt, "max_tokens": 2}
	post("/v1/completions", completion, "")
	deadline := time.Now().Add(60 * time.Second)
	for {
		var dry struct {
			ColdPath bool `json:"coldPath"`
			Probes   int  `json:"probes"`
		}
		_, b := post("/v1/global/route", map[string]any{"model": model, "tokenIds": prompt}, "")
		json.Unmarshal(b, &dry)
		if !dry.ColdPath && dry.Probes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the summaries never learnt the prompt: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	const traceID, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	resp, _ := post("/v1/completions", completion, "00-"+traceID+"-"+clientSpan+"-01")
	servedBy, pod := resp.Header.Get("X-Cellrouter-Cell"), resp.Header.Get("X-Cellrouter-Pod")
	if err := stop(); err != nil { // flushes every span
		t.Fatalf("run: %v; logs:\n%s", err, logs)
	}

	spans := rcv.Trace(traceID)
	t.Logf("trace %s:\n%s", traceID, otlptest.Tree(spans))
	find := func(name, parent, service string) []otlptest.Span {
		var got []otlptest.Span
		for _, s := range spans {
			if s.Name == name && s.ParentID == parent && s.Service() == service {
				got = append(got, s)
			}
		}
		return got
	}
	one := func(name, parent, service string) otlptest.Span {
		t.Helper()
		got := find(name, parent, service)
		if len(got) != 1 {
			t.Fatalf("%d %q spans of %s under %s, want 1; trace:\n%s", len(got), name, service, parent, otlptest.Tree(spans))
		}
		return got[0]
	}
	root := one("global.request", clientSpan, "globald")
	if !strings.HasPrefix(root.Instance(), "global/") {
		t.Errorf("globald's instance %q, want its node name", root.Instance())
	}
	one("global.summary_lookup", root.SpanID, "globald")
	probes := find("global.probe", root.SpanID, "globald")
	if len(probes) == 0 {
		t.Fatal("no probe in the trace")
	}
	answered := 0
	for _, p := range probes {
		if p.Error {
			// A probe past its deadline (50 ms, reachable on a loaded
			// machine) may never reach the cell, and one to a cell whose
			// only endpoint such misses ejected is not sent at all: the
			// probe span says so, and neither the call's span nor the
			// cell's is required.
			if n := len(find("cellrouter.cell.v1.CellService/Route", p.SpanID, "globald")); n > 1 {
				t.Errorf("failed probe of %s has %d call spans, want at most 1", p.Attrs["cellrouter.cell"], n)
			}
			t.Logf("probe of %s failed: the call's and the cell's spans are not required", p.Attrs["cellrouter.cell"])
			continue
		}
		call := one("cellrouter.cell.v1.CellService/Route", p.SpanID, "globald")
		answered++
		served := one("cellrouter.cell.v1.CellService/Route", call.SpanID, "celld")
		if served.Instance() != p.Attrs["cellrouter.cell"] {
			t.Errorf("probe of %s answered by %s", p.Attrs["cellrouter.cell"], served.Instance())
		}
	}
	if answered == 0 {
		t.Fatalf("no probe was answered; trace:\n%s", otlptest.Tree(spans))
	}
	handoff := one("global.handoff", root.SpanID, "globald")
	creq := one("cell.request", handoff.SpanID, "celld")
	if creq.Instance() != servedBy || creq.Resource["cellrouter.cell"] != servedBy {
		t.Errorf("cell.request from instance %q (resource cell %q), but %s served", creq.Instance(), creq.Resource["cellrouter.cell"], servedBy)
	}
	for _, st := range []string{"cell.stage.prepare", "cell.stage.filter", "cell.stage.score", "cell.stage.pick"} {
		one(st, creq.SpanID, "celld")
	}
	if up := one("cell.upstream", creq.SpanID, "celld"); up.Attrs["cellrouter.pod"] != pod {
		t.Errorf("upstream call to %q, but %q served", up.Attrs["cellrouter.pod"], pod)
	}
}
