package cell

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestCellRefusesMalformedFields sends the bodies a reviewer found passing
// to the engine (invalid UTF-8 in a prompt, a string temperature, n = -5,
// model twice) and checks each is a 400 naming the parameter, and that
// the pod got none of them.
func TestCellRefusesMalformedFields(t *testing.T) {
	pod := newFakePod(t, "a")
	c := cellWithPods(t, []*fakePod{pod}, nil)
	cases := []struct{ name, path, body, param string }{
		{"invalid UTF-8 in a prompt", "/v1/completions", "{\"model\":\"m\",\"prompt\":\"caf\xe9\"}", "prompt"},
		{"invalid UTF-8 in a chat", "/v1/chat/completions", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "messages"},
		{"temperature hot", "/v1/completions", `{"model":"m","prompt":"x","temperature":"hot"}`, "temperature"},
		{"n negative", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}],"n":-5}`, "n"},
		{"model twice", "/v1/completions", `{"model":"m","prompt":"x","model":"other"}`, "model"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post("http://"+c.HTTPAddr()+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Fatalf("got %d %s, want 400", resp.StatusCode, b)
			}
			if e := servertest.ErrorBody(t, string(b)); e.Param == nil || *e.Param != tc.param {
				t.Errorf("param: got %v, want %q (%s)", e.Param, tc.param, b)
			}
		})
	}
	pod.mu.Lock()
	n := len(pod.requests)
	pod.mu.Unlock()
	if n != 0 {
		t.Errorf("the pod got %d requests, want none", n)
	}
}
