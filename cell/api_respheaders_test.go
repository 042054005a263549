package cell

import (
	"strings"
	"testing"
)

// TestCellRelaysNoEngineAddress checks a pod's X-Enginesim-Pod (its
// address) does not reach the cell's client, and the cell's own headers
// (the pod's id and the cell's) do.
func TestCellRelaysNoEngineAddress(t *testing.T) {
	pod := newFakePod(t, "a")
	c := cellWithPods(t, []*fakePod{pod}, nil)
	resp, body := completion(t, "http://"+c.HTTPAddr(), promptTokens(3), false, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("completion: got %d %s", resp.StatusCode, body)
	}
	if v := resp.Header.Get("X-Enginesim-Pod"); v != "" {
		t.Errorf("X-Enginesim-Pod reached the client: %q", v)
	}
	if resp.Header.Get(PodHeader) != "a" || resp.Header.Get(CellIDHeader) == "" {
		t.Errorf("router headers: got %s %q, %s %q", PodHeader, resp.Header.Get(PodHeader), CellIDHeader, resp.Header.Get(CellIDHeader))
	}
	for k, vv := range resp.Header {
		if strings.Contains(strings.Join(vv, " "), pod.addr()) {
			t.Errorf("%s carries the pod's address: %q", k, vv)
		}
	}
}
