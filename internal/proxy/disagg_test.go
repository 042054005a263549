package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
)

// prefillResponse is what a vLLM prefill pod with the NixlConnector answers.
const prefillResponse = `{"id":"cmpl-p","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"!","finish_reason":"length"}],` +
	`"usage":{"prompt_tokens":64,"completion_tokens":1,"total_tokens":65,"prompt_tokens_details":{"cached_tokens":48}},` +
	`"kv_transfer_params":{"do_remote_prefill":true,"do_remote_decode":false,"remote_block_ids":[7,8,9,10],"remote_engine_id":"eng-p1","remote_host":"10.1.2.3","remote_port":5601,"tp_size":1}}`

// newPrefillPod returns a pod that answers every request with the given
// status and body.
func newPrefillPod(t *testing.T, status int, body string) *fakePod {
	return newFakePod(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	})
}

// newDecodePod returns a pod that streams two events.
func newDecodePod(t *testing.T) *fakePod {
	return newFakePod(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseEvent(`{"choices":[{"text":"decoded"}]}`)+sseEvent("[DONE]"))
	})
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

func TestForwardDisaggregated(t *testing.T) {
	failing := newPrefillPod(t, http.StatusServiceUnavailable, `{"error":{"message":"busy"}}`)
	prefill := newPrefillPod(t, 200, prefillResponse)
	decode := newDecodePod(t)
	p := testProxy(t, Config{})
	var log callLog
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.ForwardDisaggregated(w, r, body,
			[]Target{failing.target("p0"), prefill.target("p1")}, []Target{decode.target("d1")}, log.hooks())
	})
	const body = `{"model":"m","prompt":"a long shared prefix","max_tokens":100,"stream":true,"stream_options":{"include_usage":true},"temperature":0.2}`
	resp, err := post(context.Background(), f.URL+"/v1/completions", body, map[string]string{"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := f.nextErr(t); err != nil {
		t.Fatalf("ForwardDisaggregated: got %v, want nil", err)
	}
	if want := sseEvent(`{"choices":[{"text":"decoded"}]}`) + sseEvent("[DONE]"); string(got) != want {
		t.Errorf("client got %q, want the decode pod's stream %q", got, want)
	}

	// The prefill leg: max_tokens 1, no stream, do_remote_decode.
	preqs := prefill.requests()
	if len(preqs) != 1 {
		t.Fatalf("prefill pod got %d requests, want 1", len(preqs))
	}
	pm := decodeJSON(t, preqs[0].Body)
	wantKV := map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "remote_engine_id": nil,
		"remote_block_ids": nil, "remote_host": nil, "remote_port": nil}
	if pm["max_tokens"] != 1.0 || pm["stream"] != false || !reflect.DeepEqual(pm["kv_transfer_params"], wantKV) || pm["stream_options"] != nil || pm["temperature"] != 0.2 {
		t.Errorf("prefill body: got %s, want max_tokens 1, stream false, no stream_options, kv %v", preqs[0].Body, wantKV)
	}

	// The decode leg: the original request plus the prefill's params.
	dreqs := decode.requests()
	if len(dreqs) != 1 {
		t.Fatalf("decode pod got %d requests, want 1", len(dreqs))
	}
	dm := decodeJSON(t, dreqs[0].Body)
	wantDecodeKV := decodeJSON(t, []byte(prefillResponse))["kv_transfer_params"]
	if !reflect.DeepEqual(dm["kv_transfer_params"], wantDecodeKV) || dm["max_tokens"] != 100.0 || dm["stream"] != true || dm["stream_options"] == nil {
		t.Errorf("decode body: got %s, want the original with kv_transfer_params %v", dreqs[0].Body, wantDecodeKV)
	}
	pid, did := preqs[0].Header.Get("X-Request-Id"), dreqs[0].Header.Get("X-Request-Id")
	if pid == "" || pid != did || failing.requests()[0].Header.Get("X-Request-Id") != pid {
		t.Errorf("X-Request-Id: got prefill %q, decode %q, want the same non-empty id", pid, did)
	}
	for _, rq := range []recorded{preqs[0], dreqs[0]} {
		if rq.Header.Get("Traceparent") == "" {
			t.Errorf("request to %s lacks traceparent", rq.Path)
		}
	}

	events, done, pre := log.snapshot()
	wantEvents := []string{"attempt p0", "retry p0", "attempt p1", "prefill-done p1", "attempt d1", "first d1", "done d1"}
	if !reflect.DeepEqual(events, wantEvents) {
		t.Errorf("hooks: got %v, want %v", events, wantEvents)
	}
	if len(pre) != 1 || !reflect.DeepEqual(pre[0].Usage, &Usage{PromptTokens: 64, CompletionTokens: 1, CachedTokens: 48}) || pre[0].Attempts != 2 {
		t.Errorf("OnPrefillDone: got %+v, want the prefill usage (48 cached) after 2 attempts", pre)
	}
	if len(done) != 1 || done[0].Err != nil || done[0].Status != 200 {
		t.Errorf("OnDone: got %+v, want one success", done)
	}
}

func TestForwardDisaggregatedKeepsClientRequestID(t *testing.T) {
	prefill := newPrefillPod(t, 200, `{"id":"x","kv_transfer_params":null}`)
	decode := newDecodePod(t)
	p := testProxy(t, Config{})
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.ForwardDisaggregated(w, r, body, []Target{prefill.target("p")}, []Target{decode.target("d")}, Hooks{})
	})
	resp, err := post(context.Background(), f.URL+"/v1/chat/completions",
		`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":50,"kv_transfer_params":{"x":1}}`,
		map[string]string{"X-Request-Id": "client-42"})
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := f.nextErr(t); err != nil {
		t.Fatal(err)
	}
	pm := decodeJSON(t, prefill.requests()[0].Body)
	if pm["max_completion_tokens"] != 1.0 || pm["max_tokens"] != 1.0 {
		t.Errorf("prefill body: got %v, want max_completion_tokens and max_tokens 1", pm)
	}
	dr := decode.requests()[0]
	dm := decodeJSON(t, dr.Body)
	if _, ok := dm["kv_transfer_params"]; ok || dm["max_completion_tokens"] != 50.0 {
		t.Errorf("decode body: got %s, want no kv_transfer_params (prefill returned null) and the original budget", dr.Body)
	}
	if id := dr.Header.Get("X-Request-Id"); id != "client-42" {
		t.Errorf("decode X-Request-Id: got %q, want client-42", id)
	}
}

func TestForwardDisaggregatedPrefillRejected(t *testing.T) {
	const errBody = `{"error":{"message":"This model's maximum context length is 4096 tokens","type":"BadRequestError","param":null,"code":400}}`
	prefill := newPrefillPod(t, 400, errBody)
	spare := newPrefillPod(t, 200, prefillResponse)
	decode := newDecodePod(t)
	p := testProxy(t, Config{})
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.ForwardDisaggregated(w, r, body, []Target{prefill.target("p"), spare.target("spare")}, []Target{decode.target("d")}, Hooks{})
	})
	resp, err := post(context.Background(), f.URL+"/v1/completions", `{"prompt":"x"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := f.nextErr(t); !errors.Is(err, ErrPrefillRejected) {
		t.Errorf("ForwardDisaggregated: got %v, want ErrPrefillRejected", err)
	}
	if resp.StatusCode != 400 || string(got) != errBody {
		t.Errorf("client got %d %s, want the prefill pod's 400", resp.StatusCode, got)
	}
	if n, m := len(spare.requests()), len(decode.requests()); n != 0 || m != 0 {
		t.Errorf("got %d spare prefill and %d decode requests, want none", n, m)
	}
}

func TestForwardDisaggregatedFailures(t *testing.T) {
	tests := []struct {
		name       string
		prefill    func(t *testing.T) []Target
		decode     func(t *testing.T) []Target
		body       string
		wantStatus int
		wantErr    error
	}{
		{"no prefill target", func(t *testing.T) []Target { return nil },
			func(t *testing.T) []Target { return []Target{newDecodePod(t).target("d")} }, `{"prompt":"x"}`, 503, ErrNoTarget},
		{"every prefill refused", func(t *testing.T) []Target { return []Target{refusedTarget(t), refusedTarget(t)} },
			func(t *testing.T) []Target { return []Target{newDecodePod(t).target("d")} }, `{"prompt":"x"}`, 502, ErrUpstream},
		{"prefill answers garbage", func(t *testing.T) []Target { return []Target{newPrefillPod(t, 200, "not json").target("p")} },
			func(t *testing.T) []Target { return []Target{newDecodePod(t).target("d")} }, `{"prompt":"x"}`, 502, ErrUpstream},
		{"every decode refused", func(t *testing.T) []Target { return []Target{newPrefillPod(t, 200, prefillResponse).target("p")} },
			func(t *testing.T) []Target { return []Target{refusedTarget(t)} }, `{"prompt":"x"}`, 502, ErrUpstream},
		{"body not an object", func(t *testing.T) []Target { return []Target{newPrefillPod(t, 200, prefillResponse).target("p")} },
			func(t *testing.T) []Target { return []Target{newDecodePod(t).target("d")} }, `[1]`, 400, ErrBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testProxy(t, Config{})
			pre, dec := tt.prefill(t), tt.decode(t)
			f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
				return p.ForwardDisaggregated(w, r, body, pre, dec, Hooks{})
			})
			resp, err := post(context.Background(), f.URL+"/v1/completions", tt.body, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err := f.nextErr(t); !errors.Is(err, tt.wantErr) {
				t.Errorf("ForwardDisaggregated: got %v, want %v", err, tt.wantErr)
			}
			var eb openai.ErrorBody
			if resp.StatusCode != tt.wantStatus || json.Unmarshal(data, &eb) != nil || eb.Error.Message == "" {
				t.Errorf("client got %d %s, want %d with an OpenAI error body", resp.StatusCode, data, tt.wantStatus)
			}
		})
	}
}

func TestCancelDuringPrefill(t *testing.T) {
	started := make(chan struct{})
	prefillCanceled := make(chan struct{})
	prefill := newFakePod(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		close(started)
		<-r.Context().Done() // a long prefill, ended only by the proxy
		close(prefillCanceled)
	})
	decode := newDecodePod(t)
	p := testProxy(t, Config{})
	var log callLog
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.ForwardDisaggregated(w, r, body, []Target{prefill.target("p")}, []Target{decode.target("d")}, log.hooks())
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		resp, err := post(ctx, f.URL+"/v1/completions", `{"prompt":"x","stream":true}`, nil)
		if err == nil {
			bufio.NewReader(resp.Body).ReadByte()
			resp.Body.Close()
		}
		errc <- err
	}()
	waitChan(t, "the prefill pod to get the request", started)
	cancel()
	waitChan(t, "the prefill pod's request context to end", prefillCanceled)
	if err := f.nextErr(t); !errors.Is(err, ErrCanceled) {
		t.Errorf("ForwardDisaggregated: got %v, want ErrCanceled", err)
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client: got %v, want context.Canceled", err)
	}
	if n := len(decode.requests()); n != 0 {
		t.Errorf("decode pod got %d requests, want 0", n)
	}
	events, done, _ := log.snapshot()
	if want := []string{"attempt p", "retry p", "prefill-done p", "done p"}; !reflect.DeepEqual(events, want) {
		t.Errorf("hooks: got %v, want %v", events, want)
	}
	if len(done) != 1 || !errors.Is(done[0].Err, ErrCanceled) {
		t.Errorf("OnDone: got %+v, want ErrCanceled", done)
	}
}
