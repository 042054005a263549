package global

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/internal/telemetry"
	"github.com/cellrouter/cellrouter/internal/telemetry/otlptest"
)

// clientTrace is the W3C trace context the test's client sends.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// TestOneTraceAcrossBothTiers sends a request through the global tier to a
// cell, with tracing set up as the daemons do it (telemetry.Setup from
// OTEL_EXPORTER_OTLP_ENDPOINT) and exported over OTLP/gRPC to an in-process
// receiver. Each part has its own provider, as separate processes would: the
// global router as globald, each cell as celld with its cell id. It checks
// that every hop is a span of the client's one trace with the right parent:
// the global request, the summary lookup, each probe down to the cell's
// pipeline stages, the hand-off, and the cell's request, stages and
// upstream call, whose context reaches the pod.
func TestOneTraceAcrossBothTiers(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	provider := func(id telemetry.Identity) trace.TracerProvider {
		tp, err := tel.Provider(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}

	hits := &sync.Map{}
	a := startTestCell(t, "cell-a", hits, cell.WithTracerProvider(provider(telemetry.Identity{Service: "celld", Instance: "cell-a", Cell: "cell-a"})))
	b := startTestCell(t, "cell-b", hits, cell.WithTracerProvider(provider(telemetry.Identity{Service: "celld", Instance: "cell-b", Cell: "cell-b"})))
	toks := tokens(21, 32*16)
	a.hold(t, "cell-a-pod0", toks, 20)
	g := startGlobal(t, StaticDirectory{a.view(t), b.view(t)},
		WithTracerProvider(provider(telemetry.Identity{Service: "globald", Instance: "global-test"})))

	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	req, _ := http.NewRequest(http.MethodPost, "http://"+g.HTTPAddr()+"/v1/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+clientTraceID+"-"+clientSpanID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// cell-a holds the prefix, but on a loaded machine a slow probe may
	// hand the request to cell-b (the choice weighs probe round trips).
	servedBy, pod := resp.Header.Get(CellHeader), resp.Header.Get("X-Cellrouter-Pod")
	if resp.StatusCode != 200 || servedBy == "" || pod == "" {
		t.Fatalf("status %d, cell %q, pod %q; want 200 and both named", resp.StatusCode, servedBy, pod)
	}

	// The handlers end their spans after the response is written: flush
	// until the root span has arrived.
	waitFor(t, "the exported trace", func() bool {
		tel.ForceFlush(ctx)
		for _, s := range rcv.Trace(clientTraceID) {
			if s.Name == "global.request" {
				return true
			}
		}
		return false
	})
	spans := rcv.Trace(clientTraceID)
	t.Logf("trace %s:\n%s", clientTraceID, otlptest.Tree(spans))
	tr := traceOf{t, spans}

	root := tr.one("global.request", clientSpanID, "globald")
	tr.one("global.summary_lookup", root.SpanID, "globald")
	probes := tr.all("global.probe", root.SpanID, "globald")
	if len(probes) != 2 {
		t.Fatalf("%d probes, want 2 (cell-a and the least loaded other)", len(probes))
	}
	probed := map[string]bool{}
	for _, p := range probes {
		call := tr.one("cellrouter.cell.v1.CellService/Route", p.SpanID, "globald")
		served := tr.one("cellrouter.cell.v1.CellService/Route", call.SpanID, "celld")
		if served.Kind != "server" || served.Instance() != p.Attrs["cellrouter.cell"] {
			t.Errorf("probe of %s answered by a %s span of %s", p.Attrs["cellrouter.cell"], served.Kind, served.Instance())
		}
		probed[served.Instance()] = true
		tr.one("cell.stage.prepare", served.SpanID, "celld")
	}
	if !probed["cell-a"] || !probed["cell-b"] {
		t.Errorf("probed cells %v, want cell-a and cell-b", probed)
	}
	handoff := tr.one("global.handoff", root.SpanID, "globald")
	creq := tr.one("cell.request", handoff.SpanID, "celld")
	if creq.Instance() != servedBy || creq.Resource["cellrouter.cell"] != servedBy || creq.Attrs["cellrouter.cell"] != servedBy {
		t.Errorf("cell.request of instance %q, resource cell %q, span cell %q; want %s, which served", creq.Instance(), creq.Resource["cellrouter.cell"], creq.Attrs["cellrouter.cell"], servedBy)
	}
	for _, st := range []string{"cell.stage.prepare", "cell.stage.filter", "cell.stage.score", "cell.stage.pick"} {
		tr.one(st, creq.SpanID, "celld")
	}
	up := tr.one("cell.upstream", creq.SpanID, "celld")
	if up.Attrs["cellrouter.pod"] != pod {
		t.Errorf("upstream call to %q, want %s, which served", up.Attrs["cellrouter.pod"], pod)
	}
	got, _ := lastTraceparent.Load(pod)
	if want := "00-" + clientTraceID + "-" + up.SpanID + "-01"; got != want {
		t.Errorf("pod got traceparent %q, want %q (the upstream span's context)", got, want)
	}
	if len(tr.services()) != 2 {
		t.Errorf("services %v, want globald and celld", tr.services())
	}
}

// traceOf finds spans of one trace by name, parent and service.
type traceOf struct {
	t     *testing.T
	spans []otlptest.Span
}

func (tr traceOf) all(name, parent, service string) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range tr.spans {
		if s.Name == name && s.ParentID == parent && s.Service() == service {
			out = append(out, s)
		}
	}
	return out
}

// one returns the one span named name under parent from service, or fails.
func (tr traceOf) one(name, parent, service string) otlptest.Span {
	tr.t.Helper()
	got := tr.all(name, parent, service)
	if len(got) != 1 {
		tr.t.Fatalf("%d %q spans of %s under %s, want 1; trace:\n%s", len(got), name, service, parent, otlptest.Tree(tr.spans))
	}
	return got[0]
}

func (tr traceOf) services() map[string]bool {
	m := map[string]bool{}
	for _, s := range tr.spans {
		m[s.Service()] = true
	}
	return m
}
