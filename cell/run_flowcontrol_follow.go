package cell

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// followStride is how often along a waiting request's prompt its blocks
// are indexed for followers: every followStride-th block and the last, so
// a follower finds its leader within followStride blocks of the depth
// they share, at a followStride-th of the cost of indexing every block.
const followStride = 8

// followIndex finds, for a request about to pass flow control, the
// waiting request whose prompt its own extends: the previous turn of its
// conversation, still in the queue, whose prefix is on no pod yet
// (flowcontrol.Request.Follows). It indexes sampled blocks of the prompts
// of the requests passing flow control, for as long as they do. It is
// safe for concurrent use.
type followIndex struct {
	next atomic.Uint64 // the last key newKey gave
	mu   sync.Mutex
	// at maps an indexed block to the requests indexed there, oldest
	// first, with the prefix depth it ends (usually one).
	at map[blockhash.Hash][]followEntry
	// blocks are each request's indexed blocks, for remove: the caller's
	// hashes belong to its decision, which is recycled before the request
	// leaves the index.
	blocks map[uint64][]blockhash.Hash
}

// followEntry is one indexed block: the request's key and the depth in
// blocks of the prefix the block ends.
type followEntry struct {
	key   uint64
	depth int
}

func newFollowIndex() *followIndex {
	return &followIndex{at: map[blockhash.Hash][]followEntry{}, blocks: map[uint64][]blockhash.Hash{}}
}

// leader returns the key of the indexed request sharing the deepest
// indexed prefix with hashes, deeper than held (the most a pod holds of
// it), and that depth; the latest indexed on a tie; 0 when none does.
func (f *followIndex) leader(hashes []blockhash.Hash, held int) (key uint64, depth int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.at) == 0 {
		return 0, 0
	}
	for i := len(hashes) - 1; i >= held; i-- {
		es := f.at[hashes[i]]
		for j := len(es) - 1; j >= 0; j-- {
			if es[j].depth == i+1 {
				return es[j].key, es[j].depth
			}
		}
	}
	return 0, 0
}

// newKey returns a new request's key (never 0).
func (f *followIndex) newKey() uint64 { return f.next.Add(1) }

// add indexes hashes for the request newKey named key.
func (f *followIndex) add(key uint64, hashes []blockhash.Hash) {
	f.mu.Lock()
	defer f.mu.Unlock()
	indexed := make([]blockhash.Hash, 0, len(hashes)/followStride+1)
	f.each(hashes, func(h blockhash.Hash, depth int) {
		f.at[h] = append(f.at[h], followEntry{key, depth})
		indexed = append(indexed, h)
	})
	f.blocks[key] = indexed
}

// remove drops what add indexed for key.
func (f *followIndex) remove(key uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.blocks[key] {
		es := slices.DeleteFunc(f.at[h], func(e followEntry) bool { return e.key == key })
		if len(es) == 0 {
			delete(f.at, h)
		} else {
			f.at[h] = es
		}
	}
	delete(f.blocks, key)
}

// each calls fn with the indexed blocks of hashes (every followStride-th
// and the last) and the depth each ends.
func (f *followIndex) each(hashes []blockhash.Hash, fn func(blockhash.Hash, int)) {
	n := len(hashes)
	for i := followStride - 1; i < n-1; i += followStride {
		fn(hashes[i], i+1)
	}
	if n > 0 {
		fn(hashes[n-1], n)
	}
}

// heldDepth is the most any of d's candidate pods holds of its prompt
// (0 without a match).
func heldDepth(d *decision) int {
	match, ok := pipeline.Match.Get(d.rc)
	if !ok || match == nil {
		return 0
	}
	held := 0
	for i := range d.rc.Candidates {
		if c := &d.rc.Candidates[i]; c.HasSlot {
			held = max(held, match.Depth(c.Slot))
		}
	}
	return held
}
