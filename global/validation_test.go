package global

import (
	"testing"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestGlobalRefusesMalformedFields sends globald the bodies a reviewer
// found passing to the engine (invalid UTF-8 in a prompt, a string
// temperature, n = -5, model twice): each is a 400 naming the parameter,
// and no cell or pod sees it.
func TestGlobalRefusesMalformedFields(t *testing.T) {
	s := startSecureTier(t, nil)
	cases := []struct{ name, body, param string }{
		{"invalid UTF-8 in a prompt", "{\"model\":\"m\",\"prompt\":\"caf\xe9\"}", "prompt"},
		{"temperature hot", `{"model":"m","prompt":"x","temperature":"hot"}`, "temperature"},
		{"n negative", `{"model":"m","prompt":"x","n":-5}`, "n"},
		{"model twice", `{"model":"m","prompt":"x","model":"other"}`, "model"},
	}
	for _, tc := range cases {
		status, _, body := s.call(t, "POST", "/v1/completions", tc.body, map[string]string{"Authorization": "Bearer lab-key"})
		if status != 400 {
			t.Errorf("%s: got %d %s, want 400", tc.name, status, body)
			continue
		}
		if e := servertest.ErrorBody(t, body); e.Param == nil || *e.Param != tc.param {
			t.Errorf("%s: param got %v, want %q (%s)", tc.name, e.Param, tc.param, body)
		}
	}
	if n := s.pod.count(); n != 0 {
		t.Errorf("the pod got %d requests, want none", n)
	}
}
