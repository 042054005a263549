package replay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

func TestFirstModel(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    string
		wantErr string
	}{
		{"vLLM list", 200, `{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B","object":"model","owned_by":"vllm"},{"id":"lora-1","object":"model"}]}`, "Qwen/Qwen2.5-7B", ""},
		{"empty list", 200, `{"object":"list","data":[]}`, "", "lists no model"},
		{"not a list", 200, `{"choices":[]}`, "", "bad model list"},
		{"not served", 404, `{"error":{"message":"no endpoint GET /v1/models"}}`, "", "404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/base/v1/models" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			got, err := FirstModel(context.Background(), srv.URL+"/base/", 10*time.Second)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("got %q, %v; want ErrNoModel mentioning %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	addr := servertest.RefusedAddr(t)
	if _, err := FirstModel(context.Background(), "http://"+addr, 10*time.Second); !errors.Is(err, ErrNoModel) {
		t.Errorf("unreachable target: got %v, want ErrNoModel", err)
	}
}
