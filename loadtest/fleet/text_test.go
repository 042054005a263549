package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/global"
)

// chatAnswer is what the tests read of a chat answer.
type chatAnswer struct {
	cell, pod string
	cached    int
	reply     string
}

// postChat sends a chat body to the fleet's global endpoint.
func postChat(t *testing.T, f *Fleet, body []byte) chatAnswer {
	t.Helper()
	resp, err := http.Post(f.Endpoint()+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
		t.Fatalf("answer %s: %v", b, err)
	}
	return chatAnswer{cell: resp.Header.Get(global.CellHeader), pod: resp.Header.Get("X-Cellrouter-Pod"),
		cached: out.Usage.Details.Cached, reply: out.Choices[0].Message.Content}
}

// startTextFleet starts two cells of two pods that never sleep.
func startTextFleet(t *testing.T, globalRemote, cellsRemote bool) *Fleet {
	t.Helper()
	cfg := DefaultConfig()
	cfg.PodsPerCell = 2
	cfg.Pod.TimeScale = 0
	cfg.SummaryInterval = 100 * time.Millisecond
	// A probe past globald's 50 ms default on a loaded machine would send
	// the second turn away from its cache: this test is about tokenizing.
	cfg.ProbeTimeout = 2 * time.Second
	cfg.GlobalTokenizeRemote, cfg.CellsTokenizeRemote = globalRemote, cellsRemote
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// summaryRouted reads the global tier's count of requests routed by
// summary with the given prompt kind.
func summaryRouted(t *testing.T, f *Fleet, kind string) string {
	t.Helper()
	resp, err := http.Get(f.Endpoint() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	prefix := `cellrouter_global_requests_total{outcome="ok",path="summary_` + kind + `"} `
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimPrefix(line, prefix)
		}
	}
	return "0"
}

// TestChatSecondTurnRoutedBySummary sends a conversation's first turn
// through globald's HTTP endpoint, waits until the global tier's summaries
// know it, then sends the second turn (first turn, the assistant's reply,
// a new user message): it must be routed by summary (not cold) to the
// cell and pod holding the first turn, which reports its blocks cached.
// The global tier tokenizes in process, through the cells' /tokenize, and
// through the cells' /tokenize answered by their pods'.
func TestChatSecondTurnRoutedBySummary(t *testing.T) {
	for _, mode := range []struct {
		name                string
		global, cellsRemote bool
	}{{"global tokenizes in process", false, false}, {"global asks the cells", true, false}, {"global asks the cells, cells ask pods", true, true}} {
		t.Run(mode.name, func(t *testing.T) {
			f := startTextFleet(t, mode.global, mode.cellsRemote)
			model := f.Pods[0][0].Config().Model
			turn1 := []tokenizer.Message{
				{Role: "system", Content: exampleSystem},
				{Role: "user", Content: "How many cells does the fleet run, and how does a request find the pod that cached its prompt?"},
			}
			body, _ := json.Marshal(map[string]any{"model": model, "messages": turn1, "max_tokens": 6})
			first := postChat(t, f, body)

			// The first turn's blocks reach the pod's cell as KV events,
			// and the global tier in the cell's next summary.
			deadline := time.Now().Add(30 * time.Second)
			for {
				d, err := f.Global.Router().Decide(context.Background(), &global.Request{Model: model, Chat: true, Messages: turn1})
				if err == nil && !d.Cold && d.Views[d.Order[0]].ID == first.cell {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the global tier never found the first turn in %s's summary (last decision %+v, %v)", first.cell, d, err)
				}
				time.Sleep(20 * time.Millisecond)
			}

			before := summaryRouted(t, f, "chat")
			turn2 := append(turn1, tokenizer.Message{Role: "assistant", Content: first.reply},
				tokenizer.Message{Role: "user", Content: "And what happens when that pod is busy?"})
			body, _ = json.Marshal(map[string]any{"model": model, "messages": turn2, "max_tokens": 6})
			second := postChat(t, f, body)
			if second.cell != first.cell || second.pod != first.pod || second.cached == 0 {
				t.Fatalf("second turn went to %s/%s with %d cached tokens; first turn went to %s/%s",
					second.cell, second.pod, second.cached, first.cell, first.pod)
			}
			if after := summaryRouted(t, f, "chat"); after == before {
				t.Fatalf("summary_chat count stayed %s: the second turn was not routed by summary", after)
			}
		})
	}
}

// TestDemoExampleChatHitsCache sends the demo's printed chat twice through
// the global endpoint: the second send goes to the same pod, routed by
// summary, and reports cached tokens.
func TestDemoExampleChatHitsCache(t *testing.T) {
	f := startTextFleet(t, false, false)
	body := ExampleChat(f.Pods[0][0].Config().Model)
	first := postChat(t, f, body)
	deadline := time.Now().Add(30 * time.Second)
	for {
		again := postChat(t, f, body)
		if again.pod == first.pod && again.cached > 0 && summaryRouted(t, f, "chat") != "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("resend went to %s with %d cached tokens (summary_chat %s); first went to %s",
				again.pod, again.cached, summaryRouted(t, f, "chat"), first.pod)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
