package cell

import (
	"context"
	"crypto/tls"
	"net/http"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
)

// tickLoop asks the applier, every interval, to kill the pods that went
// silent, and calls each (periodic checks). It returns when ctx ends.
func tickLoop(ctx context.Context, interval time.Duration, a *events.Applier, log func(string, ...any), each func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, pod := range a.Tick(now) {
				log("pod silent past dead_after: removed from the index", "pod", pod)
			}
			if each != nil {
				each()
			}
		}
	}
}

// healthLoop probes GET http(s)://<address>/health of every pod the cell
// holds (pods returns them: configured and discovered) with an address,
// every interval, and tells the registry. A pod whose
// events stop but whose health checks pass stays alive (an idle engine
// sends no events); one whose events and health checks both stop is killed
// by tickLoop. It returns when ctx ends and every probe returned.
func healthLoop(ctx context.Context, interval, timeout time.Duration, pods func() []PodConfig, reg *events.Registry, podTLS *tls.Config) {
	client := &http.Client{Timeout: timeout}
	scheme := "http"
	if podTLS != nil {
		client.Transport = &http.Transport{TLSClientConfig: podTLS}
		scheme = "https"
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		for _, p := range pods() {
			if p.Address == "" {
				continue
			}
			wg.Add(1)
			go func(p PodConfig) {
				defer wg.Done()
				reg.ObserveHealth(p.ID, probe(ctx, client, scheme, p.Address), time.Now())
			}(p)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func probe(ctx context.Context, client *http.Client, scheme, addr string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
