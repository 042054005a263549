package compare

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// bypassFront is the client side of the bypass mode: an HTTP front on
// loopback that sends a fixed share of the requests straight to a pod,
// around the cell, and the rest to the cell, as a fleet where some clients
// (a batch job, a service pinned to its pods' endpoints) address engines
// directly. Which requests go around is a hash of the request body, so
// every mode bypasses the same requests; they go to the first pods of the
// fleet (BypassPods), where such traffic concentrates, and the router does
// not see them.
type bypassFront struct {
	srv      *http.Server
	ln       net.Listener
	done     chan struct{}
	bypassed atomic.Int64
	routed   atomic.Int64
}

// startBypassFront serves on 127.0.0.1:0: share of the requests (by body
// hash) to pods[hash % len(pods)], the others to cell (base URLs).
func startBypassFront(cell string, pods []string, share float64) (*bypassFront, error) {
	cellURL, err := url.Parse(cell)
	if err != nil {
		return nil, err
	}
	podURLs := make([]*url.URL, len(pods))
	for i, p := range pods {
		if podURLs[i], err = url.Parse(p); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &bypassFront{ln: ln, done: make(chan struct{})}
	threshold := uint64(share * float64(1<<32))
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			body, _ := io.ReadAll(pr.In.Body)
			pr.Out.Body = io.NopCloser(bytes.NewReader(body))
			pr.Out.ContentLength = int64(len(body))
			h := fnv.New64a()
			_, _ = h.Write(body)
			sum := h.Sum64()
			target := cellURL
			if sum&(1<<32-1) < threshold && len(podURLs) > 0 {
				target = podURLs[(sum>>32)%uint64(len(podURLs))]
				f.bypassed.Add(1)
			} else {
				f.routed.Add(1)
			}
			pr.SetURL(target)
		},
		FlushInterval: -1, // stream server-sent events through at once
		Transport:     &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second},
		ErrorLog:      nil,
	}
	f.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(f.done)
		if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	return f, nil
}

// URL is the front's base URL.
func (f *bypassFront) URL() string { return "http://" + f.ln.Addr().String() }

// Close stops the front and waits for its server goroutine.
func (f *bypassFront) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
	<-f.done
}
