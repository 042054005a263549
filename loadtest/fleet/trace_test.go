package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// TestCellsOfOneProcessTellTheirSpansApart starts the demo fleet (two cells
// in one process) and sends requests until both cells served one. Whether
// each cell has its own provider (as globald --demo gives them, with
// service.instance.id and cellrouter.cell on the resource) or all share
// the process's one, every span of a cell names that cell, and the cell
// named is the one that served the request (X-Cellrouter-Cell).
func TestCellsOfOneProcessTellTheirSpansApart(t *testing.T) {
	for _, own := range []bool{true, false} {
		t.Run(fmt.Sprintf("own providers %v", own), func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			global, err := telemetry.Resource(context.Background(), telemetry.Identity{Service: "globald", Instance: "demo"})
			if err != nil {
				t.Fatal(err)
			}
			old := otel.GetTracerProvider()
			otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(global)))
			defer otel.SetTracerProvider(old)

			cfg := DefaultConfig()
			cfg.PodsPerCell, cfg.Pod.TimeScale = 1, 0
			if own {
				cfg.TracerProvider = func(id telemetry.Identity) (trace.TracerProvider, error) {
					res, err := telemetry.Resource(context.Background(), id)
					return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res)), err
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			f, err := Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()

			served := map[string]string{} // trace id -> the cell that served it
			cells := map[string]bool{}
			for i := 0; len(cells) < 2; i++ {
				if i == 64 {
					t.Fatalf("64 distinct prompts all went to %v", cells)
				}
				traceID := fmt.Sprintf("%032x", 0xabc000+i)
				served[traceID] = send(t, f.Endpoint(), cfg.Pod.Model, i, traceID)
				cells[served[traceID]] = true
			}
			// The cell's request span ends after its handler, which may be
			// after the client read the answer.
			deadline := time.Now().Add(20 * time.Second)
			for countNamed(rec.Ended(), "cell.request") < len(served) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			// Only the serving cell's spans: a cold prompt's probes run the
			// pipeline at other cells too, in the same trace, under the
			// probe's span rather than a cell.request.
			ended := rec.Ended()
			byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
			for _, s := range ended {
				byID[s.SpanContext().SpanID()] = s
			}
			underRequest := func(s sdktrace.ReadOnlySpan) bool {
				for ; s != nil; s = byID[s.Parent().SpanID()] {
					if s.Name() == "cell.request" {
						return true
					}
				}
				return false
			}
			seen := map[string]int{}
			for _, s := range ended {
				if !strings.HasPrefix(s.Name(), "cell.") || !underRequest(s) {
					continue
				}
				want, ok := served[s.SpanContext().TraceID().String()]
				if !ok {
					continue
				}
				if got := attr(s.Attributes(), "cellrouter.cell"); got != want {
					t.Errorf("span %s of a request %s served has cellrouter.cell %q", s.Name(), want, got)
				}
				res := s.Resource().Attributes()
				wantInstance, wantService := "demo", "globald" // the shared provider's
				if own {
					wantInstance, wantService = want, "celld"
				}
				if got := attr(res, "service.instance.id"); got != wantInstance || attr(res, "service.name") != wantService {
					t.Errorf("span %s of a request %s served has resource %s %s, want %s %s",
						s.Name(), want, attr(res, "service.name"), got, wantService, wantInstance)
				}
				if own && attr(res, "cellrouter.cell") != want {
					t.Errorf("span %s of a request %s served: resource cellrouter.cell %q", s.Name(), want, attr(res, "cellrouter.cell"))
				}
				seen[s.Name()]++
			}
			for _, name := range []string{"cell.request", "cell.stage.prepare", "cell.stage.pick", "cell.upstream"} {
				if seen[name] < len(served) {
					t.Errorf("%d %s spans for %d requests", seen[name], name, len(served))
				}
			}
		})
	}
}

// send posts a cold prompt (distinct per i) in trace traceID and returns
// the cell that served it.
func send(t *testing.T, endpoint, model string, i int, traceID string) string {
	t.Helper()
	prompt := make([]int, 64)
	for j := range prompt {
		prompt[j] = 1000*(i+1) + j // in the demo vocabulary for every i the test sends
	}
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 1})
	req, _ := http.NewRequest(http.MethodPost, endpoint+"/v1/completions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return resp.Header.Get("X-Cellrouter-Cell")
}

func countNamed(spans []sdktrace.ReadOnlySpan, name string) int {
	n := 0
	for _, s := range spans {
		if s.Name() == name {
			n++
		}
	}
	return n
}

func attr(kvs []attribute.KeyValue, key string) string {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
