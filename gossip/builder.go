package gossip

import "github.com/cellrouter/cellrouter/cachekey/blockhash"

// Builder collects one generation of a cell's chained block hashes and builds
// its Summary. A cell keeps one Builder for its lifetime: the Builder
// remembers the filter's capacity across generations, so the filter keeps its
// size (and consecutive summaries can be diffed) until the number of sampled
// hashes outgrows it (the capacity doubles) or falls below a quarter of it
// (the capacity halves, never below SummaryConfig.ExpectedElements).
//
// A Builder is not safe for concurrent use.
type Builder struct {
	cfg      SummaryConfig
	capacity int
	hashes   []blockhash.Hash
}

// NewBuilder returns a Builder for cfg.
func NewBuilder(cfg SummaryConfig) (*Builder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Builder{cfg: cfg, capacity: cfg.ExpectedElements}, nil
}

// Add offers the chained hash h of a block at the given 1-based depth. The
// hash is kept only if its depth is sampled (see Params.Sampled). A depth of
// 0 or less means "unknown": the hash is kept, which costs filter space but
// never loses a match. Add reports whether h was kept.
func (b *Builder) Add(h blockhash.Hash, depth int) bool {
	if depth > 0 && !b.sampled(depth) {
		return false
	}
	b.hashes = append(b.hashes, h)
	return true
}

// AddChain offers every hash of chain, chain[i] being at depth i+1.
func (b *Builder) AddChain(chain []blockhash.Hash) {
	for i, h := range chain {
		b.Add(h, i+1)
	}
}

func (b *Builder) sampled(depth int) bool {
	return depth <= b.cfg.Head || depth%b.cfg.Stride == 0
}

// Len returns the number of hashes kept so far in this generation.
func (b *Builder) Len() int { return len(b.hashes) }

// Capacity returns the number of sampled hashes the next filter is sized for.
func (b *Builder) Capacity() int { return b.capacity }

// Build returns the Summary of the hashes kept since the last Build (or
// Reset), after adjusting the capacity, and starts a new generation.
func (b *Builder) Build() *Summary {
	n := len(b.hashes)
	for n > b.capacity && b.capacity < 1<<30 {
		b.capacity *= 2
	}
	for n < b.capacity/4 && b.capacity/2 >= b.cfg.ExpectedElements {
		b.capacity /= 2
	}
	s := newSummary(b.cfg.params(b.capacity))
	for _, h := range b.hashes {
		s.add(h)
	}
	s.elements = uint64(n)
	b.hashes = b.hashes[:0]
	return s
}

// Reset drops the hashes kept in this generation, keeping the capacity.
func (b *Builder) Reset() { b.hashes = b.hashes[:0] }
