package tokenizer

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeVLLM serves /tokenize like vLLM, using the qwen2 fixture and the
// chatml template, and records the last request.
type fakeVLLM struct {
	tok  *BPE
	last map[string]any
}

func (f *fakeVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/tokenize" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, `{"error":"bad route"}`, http.StatusNotFound)
		return
	}
	var req tokenizeRequest
	var raw map[string]any
	body := json.NewDecoder(r.Body)
	if err := body.Decode(&raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.last = raw
	b, _ := json.Marshal(raw)
	_ = json.Unmarshal(b, &req)
	var ids []uint32
	switch {
	case req.Prompt != nil:
		ids = f.tok.EncodeString(*req.Prompt, req.AddSpecialTokens, nil)
	case req.Messages != nil:
		text, _ := chatML{}.Render(req.Messages, req.AddGenerationPrompt != nil && *req.AddGenerationPrompt)
		ids = f.tok.EncodeString(text, req.AddSpecialTokens, nil)
	default:
		http.Error(w, `{"error":"no prompt"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"tokens": ids, "count": len(ids), "max_model_len": 32768})
}

// TestRemote checks prompts and chat messages against a fake vLLM that
// tokenizes with the same fixture, and the request fields it sends.
func TestRemote(t *testing.T) {
	local := loadFixture(t, "qwen2", Options{ChatTemplate: chatML{}})
	fake := &fakeVLLM{tok: local}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := &Remote{BaseURL: srv.URL + "/", Model: "qwen", Client: srv.Client(), Timeout: 10 * time.Second}
	ctx := context.Background()

	got, err := r.Encode(ctx, "Hello <|im_start|> world", true, []uint32{42})
	if err != nil {
		t.Fatal(err)
	}
	if want := local.EncodeString("Hello <|im_start|> world", true, []uint32{42}); !slices.Equal(got, want) {
		t.Errorf("Remote.Encode got %v, want %v", got, want)
	}
	if fake.last["model"] != "qwen" || fake.last["add_special_tokens"] != true {
		t.Errorf("prompt request got %v, want model qwen and add_special_tokens true", fake.last)
	}

	msgs := []Message{{Role: "user", Content: "the cache"}}
	got, err = r.EncodeChat(ctx, msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := local.EncodeChat(ctx, msgs, nil)
	if !slices.Equal(got, want) {
		t.Errorf("Remote.EncodeChat got %v, want %v", got, want)
	}
	if fake.last["add_generation_prompt"] != true || fake.last["add_special_tokens"] != false {
		t.Errorf("chat request got %v, want add_generation_prompt true, add_special_tokens false", fake.last)
	}
}

// TestRemoteErrors checks that bad answers become ErrRemote errors that
// say what went wrong, and keep dst unchanged.
func TestRemoteErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantMsg string
	}{
		{"http error", http.StatusBadRequest, `{"error":"prompt too long"}`, "status 400"},
		{"not json", http.StatusOK, `<html>`, "bad response"},
		{"no tokens", http.StatusOK, `{"count":0}`, "no tokens"},
		{"count mismatch", http.StatusOK, `{"tokens":[1,2],"count":3}`, "count 3 but 2 tokens"},
		{"negative id", http.StatusOK, `{"tokens":[1,-2],"count":2}`, "out of range"},
		{"huge id", http.StatusOK, `{"tokens":[4294967296],"count":1}`, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			r := &Remote{BaseURL: srv.URL, Client: srv.Client()}
			got, err := r.Encode(context.Background(), "x", false, []uint32{9})
			if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Encode got error %v, want ErrRemote containing %q", err, tt.wantMsg)
			}
			if !slices.Equal(got, []uint32{9}) {
				t.Errorf("Encode on error got dst %v, want [9]", got)
			}
		})
	}
}

// TestRemoteTimeout checks that a hanging engine is cut off by Timeout.
func TestRemoteTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	r := &Remote{BaseURL: srv.URL, Client: srv.Client(), Timeout: 50 * time.Millisecond}
	_, err := r.Encode(context.Background(), "x", false, nil)
	if !errors.Is(err, ErrRemote) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Encode against a hanging server got %v, want ErrRemote wrapping DeadlineExceeded", err)
	}
}

// TestRemoteUnreachable checks the error for a closed port.
func TestRemoteUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	r := &Remote{BaseURL: url, Timeout: 10 * time.Second}
	if _, err := r.EncodeChat(context.Background(), nil, nil); !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), "POST "+url+"/tokenize") {
		t.Errorf("EncodeChat to a closed port got %v, want ErrRemote naming the URL", err)
	}
}

// TestConfig checks Validate's errors and what New builds.
func TestConfig(t *testing.T) {
	file := filepath.Join("testdata", "qwen2.tokenizer.json")
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"remote only", func(c *Config) { c.RemoteURL = "http://127.0.0.1:1" }, ""},
		{"file and template", func(c *Config) { c.File, c.ChatTemplate = file, "chatml" }, ""},
		{"file and remote chat", func(c *Config) { c.File, c.RemoteURL = file, "http://127.0.0.1:1" }, ""},
		{"nothing", func(c *Config) {}, "remote_url"},
		{"file without chat", func(c *Config) { c.File = file }, "remote_url"},
		{"template without file", func(c *Config) { c.ChatTemplate, c.RemoteURL = "chatml", "http://x" }, "chat_template"},
		{"unknown template", func(c *Config) { c.File, c.ChatTemplate = file, "vicuna" }, "chat_template"},
		{"bad url", func(c *Config) { c.RemoteURL = "127.0.0.1:8000" }, "remote_url"},
		{"negative timeout", func(c *Config) { c.RemoteURL, c.Timeout = "http://x", -1 }, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			tok, err := New(c, nil)
			if tt.wantErr == "" {
				if err != nil || tok == nil {
					t.Fatalf("New got %v, %v, want a tokenizer", tok, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New got error %v, want one naming %q", err, tt.wantErr)
			}
		})
	}
}
