package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
)

// TestErrorAnswersRelayedAsOpenAIErrors checks what the client gets for a
// pod's error answer: an OpenAI error body as it is (with the pod's other
// headers), vLLM's flat error nested, and anything else replaced by a body
// that names only the status, on the serving leg and the prefill leg.
func TestErrorAnswersRelayedAsOpenAIErrors(t *testing.T) {
	const nested = `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"BadRequestError","param":null,"code":400}}`
	const flat = `{"object":"error","message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`
	const html = `<html><body><h1>502 Bad Gateway</h1>upstream 10.0.0.7:8000 refused</body></html>`
	tests := []struct {
		name       string
		status     int
		body, ct   string
		disagg     bool
		wantBody   string // exact, or "" to check the fields below
		wantMsg    string
		wantType   string
		wantHeader bool // the pod's X-Request-Id reaches the client
	}{
		{"nested relayed as is", 400, nested, "application/json", false, nested, "", "", true},
		{"flat vLLM error nested", 404, flat, "application/json", false, "", "The model `x` does not exist.", "NotFoundError", true},
		{"HTML of a last 502 replaced", 502, html, "text/html", false, "", "the upstream server answered 502 Bad Gateway", openai.TypeServer, true},
		{"plain 429 replaced", 429, "slow down", "text/plain", false, "", "the upstream server answered 429 Too Many Requests", openai.TypeInvalidRequest, true},
		{"prefill flat 400 nested", 400, strings.Replace(flat, "404", "400", 1), "application/json", true, "", "The model `x` does not exist.", "NotFoundError", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newFakePod(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				w.Header().Set("Content-Type", tt.ct)
				w.Header().Set("X-Request-Id", "kept")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			p := testProxy(t, Config{})
			f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
				if tt.disagg {
					return p.ForwardDisaggregated(w, r, body, []Target{pod.target("p")}, []Target{pod.target("d")}, Hooks{})
				}
				return p.Forward(w, r, body, []Target{pod.target("p")}, Hooks{})
			})
			resp, err := post(context.Background(), f.URL+"/v1/completions", `{"model":"m","prompt":"x"}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ferr := f.nextErr(t)
			if tt.disagg != errors.Is(ferr, ErrPrefillRejected) || (!tt.disagg && ferr != nil) {
				t.Errorf("call error: got %v", ferr)
			}
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("got %d %q, want %d application/json", resp.StatusCode, resp.Header.Get("Content-Type"), tt.status)
			}
			if tt.wantHeader && resp.Header.Get("X-Request-Id") != "kept" {
				t.Errorf("the pod's header X-Request-Id was dropped")
			}
			if tt.wantBody != "" {
				if string(got) != tt.wantBody {
					t.Errorf("body: got %s, want %s", got, tt.wantBody)
				}
				return
			}
			var eb openai.ErrorBody
			if err := json.Unmarshal(got, &eb); err != nil {
				t.Fatalf("body %s is not an OpenAI error: %v", got, err)
			}
			if eb.Error.Message != tt.wantMsg || eb.Error.Type != tt.wantType {
				t.Errorf("body: got %s, want message %q type %q", got, tt.wantMsg, tt.wantType)
			}
			if strings.Contains(string(got), "10.0.0.7") {
				t.Errorf("body %s shows what the upstream said", got)
			}
		})
	}
}

// modelsPod answers GET /v1/models with list, and anything else with 404.
func modelsPod(t *testing.T, status int, list string) *fakePod {
	return newFakePod(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		io.WriteString(w, list)
	})
}

func TestServeModel(t *testing.T) {
	const list = `{"object":"list","data":[{"id":"m","object":"model","created":5,"owned_by":"vllm","max_model_len":4096}]}`
	tests := []struct {
		name       string
		targets    func(t *testing.T) []Target
		id         string
		wantStatus int
		wantBody   string // exact when set
		wantCode   string
		wantErr    error
	}{
		{"found after a refused pod", func(t *testing.T) []Target { return []Target{refusedTarget(t), modelsPod(t, 200, list).target("b")} },
			"m", 200, `{"id":"m","object":"model","created":5,"owned_by":"vllm","max_model_len":4096}`, "", nil},
		{"unknown model", func(t *testing.T) []Target { return []Target{modelsPod(t, 200, list).target("a")} },
			"gpt-9", 404, "", `"model_not_found"`, nil},
		{"no targets", func(t *testing.T) []Target { return nil }, "m", 503, "", `"no_pod_available"`, ErrNoTarget},
		{"every pod failed", func(t *testing.T) []Target {
			return []Target{refusedTarget(t), modelsPod(t, 500, "boom").target("b"), modelsPod(t, 200, `{"data":7}`).target("c")}
		}, "m", 502, "", `"upstream_failure"`, ErrUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testProxy(t, Config{})
			targets := tt.targets(t)
			f := newFront(t, func(w http.ResponseWriter, r *http.Request, _ []byte) error {
				return p.ServeModel(w, r, tt.id, targets)
			})
			resp, err := http.Get(f.URL + "/v1/models/" + tt.id)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ferr := f.nextErr(t); !errors.Is(ferr, tt.wantErr) || (tt.wantErr == nil) != (ferr == nil) {
				t.Errorf("ServeModel: got %v, want %v", ferr, tt.wantErr)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status: got %d (%s), want %d", resp.StatusCode, got, tt.wantStatus)
			}
			if tt.wantBody != "" {
				if string(got) != tt.wantBody {
					t.Errorf("body: got %s, want %s", got, tt.wantBody)
				}
				return
			}
			var eb openai.ErrorBody
			if err := json.Unmarshal(got, &eb); err != nil || string(eb.Error.Code) != tt.wantCode {
				t.Errorf("body: got %s, want an OpenAI error with code %s", got, tt.wantCode)
			}
			for _, tg := range targets {
				if strings.Contains(string(got), tg.Address) {
					t.Errorf("body %s names %s", got, tg.Address)
				}
			}
		})
	}
}
