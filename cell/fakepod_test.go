package cell

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// fakePod is a recording OpenAI-compatible pod.
type fakePod struct {
	id  string
	srv *httptest.Server

	mu        sync.Mutex
	requests  []recorded
	tokenizes int // /tokenize calls
	// fail makes the pod answer 503 to inference requests.
	fail bool
	// hold, when set, keeps streaming responses open until the client goes
	// away; cancelled is closed when it did.
	hold      bool
	cancelled chan struct{}
	// metrics is the pod's /metrics page; "" answers 404.
	metrics string
}

type recorded struct {
	body   map[string]any
	header http.Header
}

func newFakePod(t testing.TB, id string) *fakePod {
	t.Helper()
	p := &fakePod{id: id, cancelled: make(chan struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakePod) addr() string { return strings.TrimPrefix(p.srv.URL, "http://") }

func (p *fakePod) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}

func (p *fakePod) last() recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[len(p.requests)-1]
}

func (p *fakePod) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		return
	case "/metrics":
		p.mu.Lock()
		page := p.metrics
		p.mu.Unlock()
		if page == "" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, page)
		return
	case "/tokenize":
		// Token ids are the prompt's bytes: a stand-in tokenizer that is
		// consistent between the test and the pod.
		var req struct {
			Model  string `json:"model"`
			Prompt string `json:"prompt"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		p.mu.Lock()
		p.tokenizes++
		p.mu.Unlock()
		if req.Model != "m" {
			// vLLM's answer for a model it does not serve.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"message":"The model %s does not exist.","type":"NotFoundError","param":"model","code":404}}`, req.Model)
			return
		}
		ids := make([]int, len(req.Prompt))
		for i := range req.Prompt {
			ids[i] = int(req.Prompt[i])
		}
		b, _ := json.Marshal(map[string]any{"tokens": ids, "count": len(ids), "max_model_len": 32768})
		w.Write(b)
		return
	case "/v1/models":
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","created":1700000000,"owned_by":%q},`+
			`{"id":"org/m-lora","object":"model","created":1700000001,"owned_by":%[1]q,"parent":"m"}]}`, p.id)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(raw, &body)
	p.mu.Lock()
	p.requests = append(p.requests, recorded{body: body, header: r.Header.Clone()})
	fail, hold := p.fail, p.hold
	p.mu.Unlock()
	if fail {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		return
	}
	if kv, ok := body["kv_transfer_params"].(map[string]any); ok && kv["do_remote_decode"] == true {
		fmt.Fprintf(w, `{"id":"p","choices":[{"text":"x"}],"kv_transfer_params":{"remote_engine_id":%q,"remote_block_ids":[1,2,3]},"usage":{"prompt_tokens":64,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":32}}}`, p.id)
		return
	}
	if body["stream"] == true {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"%s-%d\"}]}\n\n", p.id, i)
			fl.Flush()
		}
		if hold {
			select {
			case <-r.Context().Done():
				p.mu.Lock()
				select {
				case <-p.cancelled: // a cancellation before this one
				default:
					close(p.cancelled)
				}
				p.mu.Unlock()
			case <-time.After(30 * time.Second):
			}
			return
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Enginesim-Pod", r.Host) // an engine naming its address
	fmt.Fprintf(w, `{"id":"c","object":"text_completion","model":"m","choices":[{"text":"hello from %s"}],"usage":{"prompt_tokens":64,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":48}}}`, p.id)
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	return servertest.RefusedAddr(t)
}
