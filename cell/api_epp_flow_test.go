package cell

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// TestEPPFlowControl checks that picker mode goes through flow control as
// proxy mode does: with the only pod saturated by a proxied request, a
// gateway's request waits, and past its tenant's deadline is answered
// with an ImmediateResponse 429 (queue_timeout, Retry-After) without a
// pick; a request that waits until the pod frees is picked then.
func TestEPPFlowControl(t *testing.T) {
	gate := make(chan struct{})
	pod := newSlowPod(t, "pod-a", 0, gate)
	c := flowCell(t, pod, func(cfg *Config) { cfg.EPPAddr = "127.0.0.1:0" })
	cc, err := grpc.NewClient(c.EPPAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := extprocv3.NewExternalProcessorClient(cc)
	base := "http://" + c.HTTPAddr()
	first := make(chan int, 1)
	go func() {
		code, _, _, _, _ := flowRequest(context.Background(), base, "quiet", nil)
		first <- code
	}()
	waitFor(t, "the first request at the pod", func() bool { return pod.count() == 1 })

	call := func(tenant string) epptest.Call {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+tenant+"-key")
		return epptest.Call{Method: "POST", Path: "/v1/completions", Header: h, NoUpstream: true,
			Body: []byte(`{"model":"m","prompt":[1,2,3,4,5,6,7,8],"max_tokens":16}`)}
	}
	out, err := epptest.Do(context.Background(), client, call("impatient"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Immediate == nil || out.Immediate.GetStatus().GetCode() != http.StatusTooManyRequests || out.Destination != "" {
		t.Fatalf("a saturated pod past the tenant's 150ms: got immediate %v, destination %q, want an immediate 429", out.Immediate, out.Destination)
	}
	var e struct {
		Error struct{ Type, Code string }
	}
	if err := json.Unmarshal(out.Immediate.GetBody(), &e); err != nil || e.Error.Type != "requests" || e.Error.Code != "queue_timeout" {
		t.Errorf("body %s: want OpenAI's error shape, requests/queue_timeout", out.Immediate.GetBody())
	}
	retry := ""
	for _, h := range out.Immediate.GetHeaders().GetSetHeaders() {
		if strings.EqualFold(h.GetHeader().GetKey(), "Retry-After") {
			retry = string(h.GetHeader().GetRawValue()) + h.GetHeader().GetValue()
		}
	}
	if retry == "" {
		t.Errorf("the 429 has no Retry-After: %v", out.Immediate.GetHeaders())
	}

	// A patient request waits for the pod and is picked once it frees.
	picked := make(chan *epptest.Outcome, 1)
	go func() {
		out, err := epptest.Do(context.Background(), client, call("quiet"))
		if err != nil {
			t.Error(err)
		}
		picked <- out
	}()
	waitFor(t, "the gateway's request in the queue", func() bool {
		n := 0
		for _, q := range c.flow.Stats().Queued {
			n += q
		}
		return n > 0
	})
	close(gate)
	if code := <-first; code != 200 {
		t.Errorf("the proxied request: got %d, want 200", code)
	}
	if out := <-picked; out == nil || out.Immediate != nil || out.Destination != strings.TrimPrefix(pod.srv.URL, "http://") {
		t.Errorf("the waiting request: got %+v, want picked to %s", out, pod.srv.URL)
	}
}
