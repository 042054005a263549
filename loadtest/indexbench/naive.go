package indexbench

import (
	"slices"
	"sync"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// Naive is the baseline indexer: the straightforward design a first version
// would have. One Go map from block hash to the slots holding it, behind one
// mutex; Match walks the chain pod by pod, for every live pod, until the
// pod's first miss. It is exact under the same prefix-closed contract.
type Naive struct {
	mu     sync.Mutex
	pods   int
	blocks map[blockhash.Hash][]index.Slot
}

var _ Indexer = (*Naive)(nil)

// NewNaive returns an empty naive index with pods 0..pods-1 alive, its map
// made for expected blocks.
func NewNaive(pods, expected int) *Naive {
	return &Naive{pods: pods, blocks: make(map[blockhash.Hash][]index.Slot, expected)}
}

// Apply applies ops in order under the lock.
func (n *Naive) Apply(ops []index.Op) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, op := range ops {
		if int(op.Slot) >= n.pods || op.Hash == 0 {
			continue
		}
		holders := n.blocks[op.Hash]
		i := slices.Index(holders, op.Slot)
		switch op.Kind {
		case index.OpStore:
			if i < 0 {
				n.blocks[op.Hash] = append(holders, op.Slot)
			}
		case index.OpRemove:
			if i < 0 {
				continue
			}
			last := len(holders) - 1
			holders[i] = holders[last]
			if last == 0 {
				delete(n.blocks, op.Hash)
			} else {
				n.blocks[op.Hash] = holders[:last]
			}
		}
	}
}

// NewMatcher returns a matcher with its own depth array.
func (n *Naive) NewMatcher() Matcher { return &naiveMatcher{n: n} }

// Blocks returns the number of distinct hashes held.
func (n *Naive) Blocks() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return int64(len(n.blocks))
}

// Close does nothing: the naive index has no goroutines.
func (n *Naive) Close() {}

// naiveMatcher holds the depths of the last Match.
type naiveMatcher struct {
	n     *Naive
	depth [index.MaxPods]int32
}

// Match walks chain for every pod in turn, under the index lock.
func (m *naiveMatcher) Match(chain []blockhash.Hash) {
	n := m.n
	n.mu.Lock()
	defer n.mu.Unlock()
	for p := 0; p < n.pods; p++ {
		d := 0
		for d < len(chain) && slices.Contains(n.blocks[chain[d]], index.Slot(p)) {
			d++
		}
		m.depth[p] = int32(d)
	}
}

// Depth returns pod s's depth in the last Match.
func (m *naiveMatcher) Depth(s index.Slot) int { return int(m.depth[s]) }
