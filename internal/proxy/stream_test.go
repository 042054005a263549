package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sseEvent formats one server-sent event.
func sseEvent(data string) string { return "data: " + data + "\n\n" }

// readEvent reads one event (up to the blank line) from rd.
func readEvent(rd *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := rd.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			return b.String(), err
		}
		if line == "\n" {
			return b.String(), nil
		}
	}
}

func TestForwardStreamsChunkByChunk(t *testing.T) {
	chunks := []string{
		sseEvent(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`),
		sseEvent(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}`),
		sseEvent(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`),
		sseEvent(`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":40,"total_tokens":43,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":32}}}`),
		sseEvent(`[DONE]`),
	}
	acks := make(chan struct{})
	pod := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		rc := http.NewResponseController(w)
		for i, c := range chunks {
			io.WriteString(w, c)
			rc.Flush()
			// The next chunk is written only once the client has this one:
			// a buffering proxy would deadlock here.
			select {
			case <-acks:
			case <-r.Context().Done():
				t.Errorf("pod: request ended while waiting for the ack of chunk %d", i)
				return
			}
		}
	})
	p := testProxy(t, Config{})
	var log callLog
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{pod.target("a")}, log.hooks())
	})
	resp, err := post(context.Background(), f.URL+"/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("Content-Type: got %q, want text/event-stream; charset=utf-8", ct)
	}
	rd := bufio.NewReader(resp.Body)
	for i, want := range chunks {
		got, err := readEvent(rd)
		if err != nil || got != want {
			t.Fatalf("event %d: got %q, %v, want %q", i, got, err, want)
		}
		if i == 0 {
			// OnFirstByte runs right after the first chunk is flushed, so
			// the client may read the chunk a moment before the hook ran.
			deadline := time.Now().Add(10 * time.Second)
			for {
				events, _, _ := log.snapshot()
				if reflect.DeepEqual(events, []string{"attempt a", "first a"}) {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("hooks after the first event: got %v, want attempt and first byte", events)
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
		acks <- struct{}{}
	}
	if rest, _ := io.ReadAll(rd); len(rest) != 0 {
		t.Errorf("after [DONE]: got %q, want nothing", rest)
	}
	if err := f.nextErr(t); err != nil {
		t.Errorf("Forward: got %v, want nil", err)
	}
	_, done, _ := log.snapshot()
	want := &Usage{PromptTokens: 40, CompletionTokens: 3, CachedTokens: 32}
	if len(done) != 1 || !reflect.DeepEqual(done[0].Usage, want) {
		t.Errorf("OnDone usage: got %+v, want %+v", done, want)
	}
}

func TestClientCancelReachesPod(t *testing.T) {
	podCanceled := make(chan struct{})
	pod := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseEvent(`{"choices":[{"text":"a"}]}`))
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // ends when the proxy drops the request
		close(podCanceled)
	})
	p := testProxy(t, Config{})
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{pod.target("a")}, Hooks{})
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := post(ctx, f.URL+"/v1/completions", `{"prompt":"x","stream":true}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readEvent(bufio.NewReader(resp.Body)); err != nil {
		t.Fatalf("first event: %v", err)
	}
	cancel()
	resp.Body.Close()
	waitChan(t, "the pod's request context to end", podCanceled)
	if err := f.nextErr(t); !errors.Is(err, ErrCanceled) {
		t.Errorf("Forward: got %v, want ErrCanceled", err)
	}
}

func TestNoRetryAfterFirstByte(t *testing.T) {
	first := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseEvent(`{"choices":[{"text":"a"}]}`))
		http.NewResponseController(w).Flush()
		hijackClose(t, w) // the pod dies mid-stream
	})
	second := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		io.WriteString(w, "should never be used")
	})
	p := testProxy(t, Config{})
	var log callLog
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{first.target("first"), second.target("second")}, log.hooks())
	})
	resp, err := post(context.Background(), f.URL+"/v1/completions", `{"prompt":"x","stream":true}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := sseEvent(`{"choices":[{"text":"a"}]}`); string(data) != want {
		t.Errorf("client got %q, want only the first event %q", data, want)
	}
	if rerr == nil {
		t.Errorf("client read: got a clean end, want the stream to break")
	}
	ferr := f.nextErr(t)
	if !errors.Is(ferr, ErrMidStream) {
		t.Errorf("Forward: got %v, want ErrMidStream", ferr)
	}
	if n := len(second.requests()); n != 0 {
		t.Errorf("second pod got %d requests, want 0", n)
	}
	events, done, _ := log.snapshot()
	if want := []string{"attempt first", "first first", "done first"}; !reflect.DeepEqual(events, want) {
		t.Errorf("hooks: got %v, want %v", events, want)
	}
	if len(done) != 1 || !errors.Is(done[0].Err, ErrMidStream) || done[0].Bytes == 0 {
		t.Errorf("OnDone: got %+v, want ErrMidStream after some bytes", done)
	}
}

func TestStreamOfManyChunks(t *testing.T) {
	// A longer stream with events split across writes at odd places: the
	// client must get the bytes exactly and the usage must be found.
	var all strings.Builder
	for i := range 200 {
		all.WriteString(sseEvent(fmt.Sprintf(`{"id":"x","choices":[{"index":0,"text":"tok%d"}]}`, i)))
	}
	all.WriteString(sseEvent(`{"id":"x","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":200,"total_tokens":205}}`))
	all.WriteString(sseEvent("[DONE]"))
	stream := all.String()
	pod := newFakePod(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := 0; i < len(stream); i += 37 {
			io.WriteString(w, stream[i:min(i+37, len(stream))])
			rc.Flush()
		}
	})
	p := testProxy(t, Config{})
	var log callLog
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{pod.target("a")}, log.hooks())
	})
	resp, err := post(context.Background(), f.URL+"/v1/completions", `{"prompt":"x","stream":true}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != stream {
		t.Errorf("client got %d bytes, want the pod's %d bytes exactly", len(data), len(stream))
	}
	if err := f.nextErr(t); err != nil {
		t.Fatal(err)
	}
	_, done, _ := log.snapshot()
	if want := (&Usage{PromptTokens: 5, CompletionTokens: 200}); len(done) != 1 || !reflect.DeepEqual(done[0].Usage, want) || done[0].Bytes != int64(len(stream)) {
		t.Errorf("OnDone: got %+v, want usage %+v and %d bytes", done, want, len(stream))
	}
}
