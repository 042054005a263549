package global

import (
	"strings"
	"testing"
)

// TestGlobalRelaysRouterHeadersNotEngineAddresses sends a completion
// through globald, a cell and a pod that names its address in a header
// (X-Enginesim-Pod): the client gets the router's headers (the cell and
// the pod that served) and the pod's request id, and no header carrying
// the pod's or the cell's address.
func TestGlobalRelaysRouterHeadersNotEngineAddresses(t *testing.T) {
	s := startSecureTier(t, nil)
	status, hdr, body := s.call(t, "POST", "/v1/completions", tierCompletion, map[string]string{"Authorization": "Bearer lab-key"})
	if status != 200 {
		t.Fatalf("completion: got %d %s, want 200", status, body)
	}
	if s.pod.last().header == nil {
		t.Fatal("the pod got no request")
	}
	want := map[string]string{CellHeader: "cell-a", "X-Cellrouter-Pod": "pod-a", "X-Request-Id": "pod-req"}
	for k, v := range want {
		if got := hdr.Get(k); got != v {
			t.Errorf("%s: got %q, want %q (%v)", k, got, v, hdr)
		}
	}
	if v := hdr.Get("X-Enginesim-Pod"); v != "" {
		t.Errorf("X-Enginesim-Pod reached the client: %q", v)
	}
	for k, vv := range hdr {
		for _, addr := range []string{s.pod.addr, s.cell.HTTPAddr()} {
			if strings.Contains(strings.Join(vv, " "), addr) {
				t.Errorf("%s carries an internal address %s: %q", k, addr, vv)
			}
		}
	}
}
