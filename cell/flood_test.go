package cell

import (
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/index"
)

// floodChain is a BlockStored batch of a new chain of n 16-token blocks
// whose tokens start at base (distinct bases give distinct blocks), with
// engine hashes from hash up.
func floodChain(base uint32, hash uint64, n int) *events.Batch {
	ev := events.Event{Kind: events.KindBlockStored, BlockSize: 16, Medium: "GPU"}
	for i := 0; i < n; i++ {
		ev.BlockHashes = append(ev.BlockHashes, hash+uint64(i))
	}
	for i := 0; i < 16*n; i++ {
		ev.TokenIDs = append(ev.TokenIDs, base+uint32(i))
	}
	return &events.Batch{DPRank: -1, Events: []events.Event{ev}}
}

// routerChainOf is the router's chain of a floodChain's tokens, as model m.
func routerChainOf(b *events.Batch) []index.BlockHash {
	return blockhash.Hasher{BlockSize: 16}.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), b.Events[0].TokenIDs, nil)
}

// matchDepth returns how many leading blocks of chain pod holds in c's index.
func matchDepth(c *Cell, pod string, chain []index.BlockHash) int {
	s, ok := c.Index().SlotOf(pod)
	if !ok {
		return 0
	}
	var r index.MatchResult
	c.Index().Match(chain, &r)
	return r.Depth(s)
}

// podBlocks counts the blocks pod holds in c's index.
func podBlocks(t *testing.T, c *Cell, pod string) int {
	n := 0
	for _, m := range indexContents(t, c.Index()) {
		if _, ok := m[pod]; ok {
			n++
		}
	}
	return n
}

// TestEventFloodOverZMQBoundedAcrossRestart is the flood of issue 22
// through real sockets: a publisher on the cell's ZMQ bind socket sends,
// for one configured pod, fifteen times the index's max_blocks of distinct
// blocks. The real pod, dialed with its replay socket, keeps every block
// and its new blocks are indexed; the flooding pod stays within its bound
// (twice its kv_blocks); the evictions show in /metrics and /v1/cell/state.
// Then the cell restarts from its shutdown snapshot: the real pod's blocks
// match again, and the flooding pod is still within its bound. Before the
// bounds, the flood filled the index, the real pod's new blocks were
// refused (holder_full), and the snapshot brought the flood back.
func TestEventFloodOverZMQBoundedAcrossRestart(t *testing.T) {
	realPub, err := vllmpub.New(vllmpub.DefaultConfig("real", "m"))
	if err != nil {
		t.Fatal(err)
	}
	defer realPub.Close()
	const maxBlocks, floodKV = 4000, 500
	bound := kvBoundFactor * floodKV
	cfg := testConfig()
	cfg.Index.MaxBlocks = maxBlocks
	cfg.Index.ExpectedBlocks = -1
	cfg.ZMQ.Bind = "tcp://127.0.0.1:0"
	cfg.Events.DefaultModel = "m"
	cfg.Pods = []PodConfig{
		{ID: "real", Model: "m", ZMQEndpoint: realPub.Endpoint(), ReplayEndpoint: realPub.ReplayEndpoint(), KVBlocks: 500},
		{ID: "flood", Model: "m", KVBlocks: floodKV},
	}
	cfg.Snapshot.Dir = t.TempDir()
	cfg.Snapshot.Interval = 0

	a, stopA := runCell(t, cfg, nil)
	waitFor(t, "cell ready", func() bool { code, _ := get(t, "http://"+a.HTTPAddr()+"/readyz"); return code == 200 })
	waitFor(t, "bind", func() bool { return a.ZMQBindEndpoint() != "" })
	waitFor(t, "real pod subscribed", realPub.Subscribed)
	fcfg := vllmpub.DefaultConfig("flood", "m")
	fcfg.Connect, fcfg.Endpoint, fcfg.ReplayEndpoint = true, a.ZMQBindEndpoint(), ""
	floodPub, err := vllmpub.New(fcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer floodPub.Close()
	waitFor(t, "flood subscribed", floodPub.Subscribed)

	applied := uint64(0)
	publish := func(p *vllmpub.Publisher, b *events.Batch) {
		t.Helper()
		if _, err := p.Publish(b); err != nil {
			t.Fatal(err)
		}
		applied++
	}
	settle := func() {
		t.Helper()
		waitFor(t, "batches applied", func() bool { return a.Applier().Counters().Batches.Load() >= applied })
	}
	old := floodChain(1, 1, 50)
	publish(realPub, old)
	settle()

	// The flood: 60,000 distinct blocks in chains of 60, paced so that no
	// message is lost to a full queue (a loss would clear the pod and hide
	// the flood).
	const floodBlocks, perBatch = 15 * maxBlocks, 60
	for i := 0; i < floodBlocks/perBatch; i++ {
		publish(floodPub, floodChain(uint32(10_000_000+i*16*perBatch), uint64(1_000_000+i*perBatch), perBatch))
		if i%50 == 49 {
			settle()
		}
	}
	settle()
	fresh := floodChain(500_000, 5000, 50)
	publish(realPub, fresh)
	settle()

	if got := matchDepth(a, "real", routerChainOf(old)); got != 50 {
		t.Errorf("real pod's blocks from before the flood: depth %d, want 50", got)
	}
	if got := matchDepth(a, "real", routerChainOf(fresh)); got != 50 {
		t.Errorf("real pod's blocks stored after the flood: depth %d, want 50", got)
	}
	if got := podBlocks(t, a, "flood"); got > bound || got < bound/2 {
		t.Errorf("flood pod holds %d blocks, want at most its bound %d (and the flood to have filled most of it)", got, bound)
	}
	ct := a.Applier().Counters()
	if n := ct.EventsDropped[events.ReasonHolderFull].Load(); n != 0 {
		t.Errorf("holder_full drops = %d, want 0", n)
	}
	if st := a.Index().Stats(); st.CapDrops != 0 {
		t.Errorf("index cap drops = %d, want 0", st.CapDrops)
	}
	_, metrics := get(t, "http://"+a.HTTPAddr()+"/metrics")
	if !strings.Contains(metrics, `cellrouter_events_evicted_blocks_total{cell="cell-0",pod="flood",reason="pod_bound"}`) ||
		strings.Contains(metrics, `cellrouter_events_evicted_blocks_total{cell="cell-0",pod="real"`) {
		t.Errorf("/metrics lacks the flood pod's evictions, or names the real pod's")
	}
	_, state := get(t, "http://"+a.HTTPAddr()+"/v1/cell/state")
	if !strings.Contains(state, `"blocksEvictedByPod":{"flood/pod_bound":`) || strings.Contains(state, "real/") {
		t.Errorf("/v1/cell/state lacks the flood pod's evictions (or names the real pod's): %s", state)
	}
	stopA()

	b, _ := runCell(t, cfg, nil)
	waitFor(t, "restarted cell ready", func() bool { code, _ := get(t, "http://"+b.HTTPAddr()+"/readyz"); return code == 200 })
	for _, ch := range []*events.Batch{old, fresh} {
		if got := matchDepth(b, "real", routerChainOf(ch)); got != 50 {
			t.Errorf("after restart: real pod's chain depth %d, want 50", got)
		}
	}
	if got := podBlocks(t, b, "flood"); got > bound {
		t.Errorf("after restart: flood pod holds %d blocks, want at most %d", got, bound)
	}
	if got := b.Applier().IndexedBlocks("flood"); got > bound {
		t.Errorf("after restart: flood pod's forest indexes %d blocks, want at most %d", got, bound)
	}
	if got := b.Index().Stats().Blocks; got > maxBlocks {
		t.Errorf("after restart: %d blocks indexed, want at most %d", got, maxBlocks)
	}
}
