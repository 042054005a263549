package gossip_test

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/gossip"
)

// Example shows a cell building two summary generations, a global replica
// following them through a snapshot and then a delta, and the depth
// estimate for a request's chain.
func Example() {
	chain := make([]blockhash.Hash, 40)
	for i := range chain {
		chain[i] = blockhash.Hash(0x9e3779b97f4a7c15 * uint64(i+1))
	}
	b, _ := gossip.NewBuilder(gossip.DefaultSummaryConfig())
	pub, _ := gossip.NewPublisher("cell-1", 1, 0)
	var rep gossip.Replica

	// Generation 1: the cell holds the first 10 blocks of the chain.
	for d := 1; d <= 10; d++ {
		b.Add(chain[d-1], d)
	}
	pub.Publish(b.Build())
	up := pub.Since(rep.Epoch, rep.Gen)
	rep.ApplySnapshot(up.Snapshot)
	fmt.Println("gen", rep.Gen, "depth", rep.Summary.Depth(chain))

	// Generation 2: it now holds the first 30.
	for d := 1; d <= 30; d++ {
		b.Add(chain[d-1], d)
	}
	pub.Publish(b.Build())
	up = pub.Since(rep.Epoch, rep.Gen)
	rep.ApplyDelta(up.Delta)
	fmt.Println("gen", rep.Gen, "depth", rep.Summary.Depth(chain), "flipped", up.Delta.Flipped.GetCardinality() > 0)
	// Output:
	// gen 1 depth 8
	// gen 2 depth 28 flipped true
}
