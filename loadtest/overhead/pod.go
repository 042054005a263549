package overhead

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// pod is the instant OpenAI-compatible pod both sides call.
type pod struct {
	srv    *http.Server
	lis    net.Listener
	chunks int
}

func startPod(chunks int) (*pod, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &pod{lis: l, chunks: chunks}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve)}
	go labelled("pod", func() { _ = p.srv.Serve(l) })
	return p, nil
}

func (p *pod) addr() string { return p.lis.Addr().String() }

func (p *pod) close() { p.srv.Close() }

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (p *pod) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" {
		return
	}
	// The pod reads into a pooled buffer: its garbage would otherwise make
	// the process collect more often, stretching both sides' tails.
	buf := bodyPool.Get().(*bytes.Buffer)
	defer bodyPool.Put(buf)
	buf.Reset()
	_, _ = buf.ReadFrom(r.Body)
	if bytes.Contains(buf.Bytes(), []byte(`"stream":true`)) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 0; i < p.chunks; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"t%d\"}]}\n\n", i)
			fl.Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1024,\"completion_tokens\":16,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\ndata: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"x","object":"text_completion","choices":[{"index":0,"text":"ok"}],"usage":{"prompt_tokens":1024,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}}`)
}
