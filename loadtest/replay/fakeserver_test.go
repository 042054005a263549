package replay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Behaviours of the fake server, chosen by a request's max_tokens.
const (
	tok4xx     = 401
	tok5xx     = 503
	tokSlow    = 777 // never answers until the client gives up
	tokBroken  = 666 // streams two chunks, then ends without [DONE]
	tokHangup  = 999 // closes the connection without a response
	tokBadJSON = 555 // a chunk that is not JSON
)

// fakeRequest is what the fake server reads of a request.
type fakeRequest struct {
	Prompt    []uint32 `json:"prompt"`
	MaxTokens int      `json:"max_tokens"`
	Stream    bool     `json:"stream"`
	Options   *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// fakeOpenAI is an OpenAI completions server: it waits 20ms per 512 prompt
// tokens before the first token (a prefill), streams max_tokens chunks of
// one word, reports half the prompt as cached, and names the pod
// "pod-<prompt blocks mod 2>" in X-Cellrouter-Pod. Special max_tokens
// values select failures (see the tok constants).
func fakeOpenAI(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req fakeRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch req.MaxTokens {
		case tok4xx:
			http.Error(w, `{"error":{"message":"bad"}}`, http.StatusBadRequest)
			return
		case tok5xx:
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		case tokSlow:
			<-r.Context().Done()
			return
		case tokHangup:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("X-Cellrouter-Pod", fmt.Sprintf("pod-%d", len(req.Prompt)/trace.TokensPerID%2))
		usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}`,
			len(req.Prompt), req.MaxTokens, len(req.Prompt)+req.MaxTokens, len(req.Prompt)/2)
		prefill := time.Duration(len(req.Prompt)/trace.TokensPerID) * 20 * time.Millisecond
		time.Sleep(prefill)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"hi"}],"usage":%s}`, usage)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 0; i < req.MaxTokens; i++ {
			if req.MaxTokens == tokBadJSON && i == 1 {
				fmt.Fprint(w, "data: {not json\n\n")
				fl.Flush()
				return
			}
			if req.MaxTokens == tokBroken && i == 2 {
				return
			}
			fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\" w%d\"}]}\n\n", i)
			fl.Flush()
			time.Sleep(time.Millisecond)
		}
		if req.Options != nil && req.Options.IncludeUsage {
			fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"choices\":[],\"usage\":%s}\n\n", usage)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// rec returns a record of ids hash ids (a full last block) arriving at ms
// with out output tokens.
func rec(ms int64, ids int, out int) trace.Record {
	r := trace.Record{Timestamp: ms, InputLength: ids * trace.TokensPerID, OutputLength: out}
	for i := 0; i < ids; i++ {
		r.HashIDs = append(r.HashIDs, uint64(i))
	}
	return r
}
