package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// openAIServer is an OpenAI endpoint on 127.0.0.1:0 that lists models and
// answers completions (streamed or not) at once; models records the model
// of each completion request.
type openAIServer struct {
	*httptest.Server
	mu     sync.Mutex
	models []string
}

func newOpenAIServer(t *testing.T, list string) *openAIServer {
	t.Helper()
	s := &openAIServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
			fmt.Fprint(w, list)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/completions":
			var req struct {
				Model  string `json:"model"`
				Stream bool   `json:"stream"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			s.mu.Lock()
			s.models = append(s.models, req.Model)
			s.mu.Unlock()
			usage := `{"prompt_tokens":512,"completion_tokens":2,"total_tokens":514,"prompt_tokens_details":{"cached_tokens":256}}`
			if !req.Stream {
				fmt.Fprintf(w, `{"id":"c","object":"text_completion","choices":[{"index":0,"text":"hi"}],"usage":%s}`, usage)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"h\"}]}\n\n")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"i\"}]}\n\n")
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":%s}\n\ndata: [DONE]\n\n", usage)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *openAIServer) requestModels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.models...)
}

// TestRunAsTheREADMEShowsIt runs "loadtest run --target URL" with neither
// --trace nor --model, from this package's directory (not the repository
// root): the repository's trace is found and the model is the target's
// first.
func TestRunAsTheREADMEShowsIt(t *testing.T) {
	srv := newOpenAIServer(t, `{"object":"list","data":[{"id":"served-model","object":"model"},{"id":"other","object":"model"}]}`)
	var out, errOut bytes.Buffer
	args := []string{"run", "--target", srv.URL, "--max-requests", "4", "--time-scale", "0", "--json", "--quiet"}
	if err := dispatch(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("dispatch: %v\nstderr:\n%s", err, errOut.String())
	}
	var sum struct {
		Requests int `json:"requests"`
		OK       int `json:"ok"`
	}
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out.String())
	}
	if sum.Requests != 4 || sum.OK != 4 {
		t.Errorf("got %d requests, %d ok; want 4 and 4", sum.Requests, sum.OK)
	}
	models := srv.requestModels()
	if len(models) != 4 {
		t.Fatalf("server got %d completions, want 4", len(models))
	}
	for _, m := range models {
		if m != "served-model" {
			t.Errorf("request model: got %q, want served-model (the target's first)", m)
		}
	}
}

func TestRunErrors(t *testing.T) {
	empty := newOpenAIServer(t, `{"object":"list","data":[]}`)
	noModels := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(noModels.Close)
	tests := []struct {
		name    string
		args    []string
		chdir   bool // run from a directory outside the repository
		wantErr []string
	}{
		{"target lists no model", []string{"--target", empty.URL}, false, []string{"lists no model", "--model"}},
		{"target has no /v1/models", []string{"--target", noModels.URL}, false, []string{"404", "--model"}},
		{"no trace outside the repository", []string{"--target", empty.URL, "--model", "m"}, true,
			[]string{"conversation_trace.jsonl", "--trace PATH"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.chdir {
				t.Chdir(t.TempDir())
			}
			var out, errOut bytes.Buffer
			args := append([]string{"run", "--max-requests", "2", "--time-scale", "0", "--quiet"}, tt.args...)
			err := dispatch(context.Background(), args, &out, &errOut)
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got error %v, want one containing %q", err, want)
				}
			}
		})
	}
}
