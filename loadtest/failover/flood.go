package failover

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

// FloodResult is what the event flood did and what the cell kept.
type FloodResult struct {
	// Pod is the pod the flood's events named; BlocksSent the blocks
	// published to each replica of its cell; Seconds how long that took.
	Pod        string  `json:"pod"`
	BlocksSent int     `json:"blocks_sent"`
	Seconds    float64 `json:"seconds"`
	// OtherPodsBlocksBefore and OtherPodsBlocksAfter are the blocks the
	// first replica's index held for the cell's other pods before the flood
	// and once it was applied; FloodedPodBlocks those of the flooded pod.
	OtherPodsBlocksBefore uint64 `json:"other_pods_blocks_before"`
	OtherPodsBlocksAfter  uint64 `json:"other_pods_blocks_after"`
	FloodedPodBlocks      uint64 `json:"flooded_pod_blocks"`
	// FreshPromptMatchedBlocks is what the first replica's route API
	// matched for a fresh prompt sent three times to that replica after
	// the flood (of FreshPromptBlocks): 0 means the index took no new block.
	FreshPromptMatchedBlocks int `json:"fresh_prompt_matched_blocks"`
	FreshPromptBlocks        int `json:"fresh_prompt_blocks"`
	// CapDrops is the growth of the first replica's
	// cellrouter_index_cap_drops_total over the flood and the fresh
	// prompt: stores refused because the index reached max_blocks.
	CapDrops float64 `json:"cap_drops"`
}

// floodBatchBlocks is the blocks of one flood batch.
const floodBatchBlocks = 512

// podBlocks returns the blocks replica r's index holds per pod (nil when
// it does not answer).
func (f *fleet) podBlocks(r *replicaProc) map[string]uint64 {
	resp, err := f.client.Get("http://" + r.http + "/v1/cell/pods")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var out struct {
		Pods []struct {
			ID     string      `json:"id"`
			Blocks json.Number `json:"blocks"`
		} `json:"pods"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil
	}
	m := map[string]uint64{}
	for _, p := range out.Pods {
		n, _ := p.Blocks.Int64()
		m[p.ID] = uint64(n)
	}
	return m
}

// othersAnd sums the blocks of every pod but pod, and returns pod's.
func othersAnd(m map[string]uint64, pod string) (others, flooded uint64) {
	for id, n := range m {
		if id == pod {
			flooded = n
		} else {
			others += n
		}
	}
	return others, flooded
}

// floodPayloads encodes n blocks of distinct random chains, in batches.
func floodPayloads(n int, rng *rand.Rand) ([][]byte, error) {
	var out [][]byte
	for sent := 0; sent < n; sent += floodBatchBlocks {
		k := min(floodBatchBlocks, n-sent)
		ev := events.Event{Kind: events.KindBlockStored, BlockHashes: make([]uint64, k), TokenIDs: make([]uint32, k*blockSize), BlockSize: blockSize}
		for i := range ev.BlockHashes {
			ev.BlockHashes[i] = rng.Uint64()
		}
		for i := range ev.TokenIDs {
			ev.TokenIDs[i] = rng.Uint32N(50000)
		}
		p, err := vllmwire.EncodePayload(nil, &events.Batch{DPRank: -1, Events: []events.Event{ev}}, vllmwire.FormArray)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// eventFlood publishes FloodBlocks distinct blocks for the first pod of
// the last cell into the ZMQ bind socket of every replica of the cell, as a
// hostile publisher that reached the socket would, then measures what the
// first replica's index keeps for the other pods and whether it still
// takes new blocks (a fresh prompt sent three times, then routed).
func eventFlood(ctx context.Context, cfg Config, f *fleet, inj *injection) {
	cell := cfg.Cells - 1
	pd := f.pods[cell*cfg.PodsPerCell]
	reps := f.replicasOf(cell)
	first := reps[0]
	res := &FloodResult{Pod: pd.id}
	inj.flood, inj.target = res, pd.id
	res.OtherPodsBlocksBefore, _ = othersAnd(f.podBlocks(first), pd.id)
	capDrops := fmt.Sprintf(`cellrouter_index_cap_drops_total{cell="cell-%d"}`, cell)
	drops0 := f.sampleAt(first.http, capDrops)
	payloads, err := floodPayloads(cfg.FloodBlocks, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 22)))
	if err != nil {
		progress(cfg, "  event flood: %v", err)
		return
	}
	inj.at = time.Now()
	deadline := inj.at.Add(cfg.Window / 2)
	var (
		wg   sync.WaitGroup
		sent atomic.Int64
		mu   sync.Mutex
		pubs []*vllmpub.Publisher
	)
	for _, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pub, n := publishFlood(ctx, cfg, r, pd.id, payloads, deadline)
			sent.Add(int64(n))
			if pub != nil {
				mu.Lock()
				pubs = append(pubs, pub)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// The PUB sockets queue what they were handed: keep them open until
	// the cell took it all, that is until the flooded pod's count holds
	// still for a second (or the window's half passed).
	var last uint64
	seen := false
	poll(ctx, time.Until(deadline)+5*time.Second, func() bool {
		time.Sleep(time.Second)
		_, n := othersAnd(f.podBlocks(first), pd.id)
		stable := seen && n == last
		last, seen = n, true
		return stable
	})
	for _, p := range pubs {
		p.Close()
	}
	res.Seconds = time.Since(inj.at).Seconds()
	res.BlocksSent = int(sent.Load()) / len(reps)
	res.OtherPodsBlocksAfter, res.FloodedPodBlocks = othersAnd(f.podBlocks(first), pd.id)
	res.FreshPromptBlocks = 64
	res.FreshPromptMatchedBlocks = f.freshPromptMatch(ctx, first, res.FreshPromptBlocks)
	res.CapDrops = f.sampleAt(first.http, capDrops) - drops0
	progress(cfg, "  %s", res.summary())
}

// publishFlood hands payloads for pod to a publisher connected to replica
// r's bind socket until they are all queued or deadline, and returns the
// publisher (for the caller to close once the cell took them; nil on
// failure) and the blocks handed over.
func publishFlood(ctx context.Context, cfg Config, r *replicaProc, pod string, payloads [][]byte, deadline time.Time) (*vllmpub.Publisher, int) {
	pc := vllmpub.DefaultConfig(pod, model)
	pc.Endpoint, pc.Connect, pc.ReplayEndpoint, pc.BufferSize, pc.DialTimeout = r.zmqBind, true, "", 16, 5*time.Second
	pub, err := vllmpub.New(pc)
	if err != nil {
		progress(cfg, "  event flood: publisher to %s: %v", r.zmqBind, err)
		return nil, 0
	}
	if poll(ctx, 5*time.Second, pub.Subscribed).IsZero() {
		progress(cfg, "  event flood: %s never subscribed", r.zmqBind)
		pub.Close()
		return nil, 0
	}
	blocks := 0
	for i, p := range payloads {
		if ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		if _, err := pub.PublishPayload(p); err != nil {
			break
		}
		blocks += min(floodBatchBlocks, cfg.FloodBlocks-i*floodBatchBlocks)
	}
	return pub, blocks
}

// freshPromptMatch sends a fresh prompt of n blocks three times to replica
// r, then asks r's route API how many of its blocks the pick holds (polled
// for a few seconds while the pod's events arrive); -1 when r does not
// answer.
func (f *fleet) freshPromptMatch(ctx context.Context, r *replicaProc, n int) int {
	toks := make([]uint32, n*blockSize)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 99))
	for i := range toks {
		toks[i] = rng.Uint32N(50000)
	}
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": toks, "max_tokens": 1})
	cl := &http.Client{Timeout: 30 * time.Second}
	for range 3 {
		resp, err := cl.Post("http://"+r.http+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			return -1
		}
		resp.Body.Close()
	}
	route, _ := json.Marshal(map[string]any{"model": model, "token_ids": toks})
	best := -1
	poll(ctx, 5*time.Second, func() bool {
		resp, err := f.client.Post("http://"+r.http+"/v1/cell/route", "application/json", bytes.NewReader(route))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var out struct {
			Pick *struct {
				Matched  int `json:"matchedBlocks"`
				Matched2 int `json:"matched_blocks"`
			} `json:"pick"`
		}
		if json.NewDecoder(resp.Body).Decode(&out) != nil || out.Pick == nil {
			return false
		}
		best = max(best, out.Pick.Matched, out.Pick.Matched2)
		return best > 0
	})
	return best
}

// floodSummary is the flood's one-line note for the table.
func (r *FloodResult) summary() string {
	return fmt.Sprintf("event flood of %s: %d blocks in %.1fs; other pods' blocks %d -> %d; flooded pod %d; fresh prompt matched %d/%d; index cap drops +%.0f",
		r.Pod, r.BlocksSent, r.Seconds, r.OtherPodsBlocksBefore, r.OtherPodsBlocksAfter, r.FloodedPodBlocks, r.FreshPromptMatchedBlocks, r.FreshPromptBlocks, r.CapDrops)
}
