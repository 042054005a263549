package enginesim

import (
	"sort"
	"strings"
	"sync"
)

// engineLoad is what a pod's /metrics reports of its running batch, as
// vLLM does: the KV blocks its running requests hold (kv_cache_usage_perc
// counts blocks in use, not blocks kept for prefix reuse, which vLLM
// counts as free), and the LoRA adapters of its running and waiting
// requests (lora_requests_info).
type engineLoad struct {
	mu      sync.Mutex
	blocks  int            // KV blocks held by running requests
	running map[string]int // adapter -> running requests
	waiting map[string]int // adapter -> waiting requests
}

// requestBlocks is the KV blocks a request holds while it runs: its prompt
// and its output, in blocks of blockSize, as the router counts them.
func requestBlocks(g *genRequest, blockSize int) int {
	return (len(g.tokens) + g.maxTokens + blockSize - 1) / blockSize
}

// wait records a request that starts waiting for the running batch.
func (l *engineLoad) wait(adapter string) {
	if adapter == "" {
		return
	}
	l.mu.Lock()
	if l.waiting == nil {
		l.waiting, l.running = map[string]int{}, map[string]int{}
	}
	l.waiting[adapter]++
	l.mu.Unlock()
}

// start moves a request from waiting to running, holding blocks (ok
// false: it gave up waiting).
func (l *engineLoad) start(adapter string, blocks int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if adapter != "" {
		if l.waiting[adapter]--; l.waiting[adapter] <= 0 {
			delete(l.waiting, adapter)
		}
		if ok {
			l.running[adapter]++
		}
	}
	if ok {
		l.blocks += blocks
	}
}

// finish releases a running request's blocks and adapter.
func (l *engineLoad) finish(adapter string, blocks int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.blocks -= blocks
	if adapter != "" {
		if l.running[adapter]--; l.running[adapter] <= 0 {
			delete(l.running, adapter)
		}
	}
}

// snapshot returns the blocks in use and the adapters running and
// waiting, each sorted and comma-joined as vLLM's labels are.
func (l *engineLoad) snapshot() (blocks int, running, waiting string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	join := func(m map[string]int) string {
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		return strings.Join(names, ",")
	}
	return l.blocks, join(l.running), join(l.waiting)
}
