package enginesim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitTimeout bounds every wait of the tests; generous for a loaded
// 2-core machine.
const waitTimeout = 30 * time.Second

// quiet discards log lines.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testConfig returns a listening pod configuration without events that
// never sleeps.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.TimeScale = 0
	cfg.Events.Disabled = true
	cfg.Logger = quiet
	return cfg
}

// startPod starts a pod for the test and closes it at the end.
func startPod(t testing.TB, cfg Config) *Pod {
	t.Helper()
	p, err := NewPod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// waitFor polls cond until it holds or waitTimeout passes, then fails with
// what() describing the last state.
func waitFor(t testing.TB, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", waitTimeout, what())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// reply is an HTTP answer read in full.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// post sends body to the pod's path and reads the answer.
func post(t testing.TB, p *Pod, path string, body any) reply {
	t.Helper()
	return postCtx(t, context.Background(), p, path, body)
}

// postCtx is post with a context.
func postCtx(t testing.TB, ctx context.Context, p *Pod, path string, body any) reply {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read: %v", path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: out}
}

// get sends a GET to the pod's path.
func get(t testing.TB, p *Pod, path string) reply {
	t.Helper()
	resp, err := http.Get(p.URL() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: out}
}

// completion is the part of a (non-streamed) answer the tests read.
type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Text    string `json:"text"`
		Message *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`
}

// decodeCompletion decodes a 200 answer.
func decodeCompletion(t testing.TB, r reply) completion {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("got status %d (%s), want 200", r.status, r.body)
	}
	var c completion
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatalf("answer does not decode: %v\n%s", err, r.body)
	}
	if c.Usage.PromptTokensDetails == nil {
		t.Fatalf("answer has no usage.prompt_tokens_details: %s", r.body)
	}
	return c
}

// tokens returns n token ids starting at base, distinct per base.
func tokens(base, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(ReservedTokens + (base*7919+i*31)%100000)
	}
	return out
}

// words returns a text of n distinct-looking words.
func words(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(prefix)
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}
