package gossip

import (
	"fmt"
	"math"

	"github.com/bits-and-blooms/bloom/v3"
)

// Wire limits on summary parameters. A decoder rejects anything outside them
// before allocating, so a hostile peer cannot make a receiver allocate more
// than MaxFilterBits/8 bytes for one filter.
const (
	// MaxFilterBits is the largest Bloom filter, in bits, that may travel
	// (16 MiB): it keeps a snapshot under memberlist's 20 MB limit on one
	// reliable user message and on one push/pull state.
	MaxFilterBits = 1 << 27
	// MaxHashFuncs is the largest number of Bloom hash functions accepted.
	MaxHashFuncs = 32
	// MaxStride is the largest sampling stride accepted.
	MaxStride = 1 << 16
	// MaxHead is the largest number of always-sampled leading depths.
	MaxHead = 1 << 16
)

// Params describes the shape of a Summary: the Bloom filter's size M in bits
// (a multiple of 64) and number of hash functions K, and the depth sampling
// (Stride, Head). Two summaries can be diffed only if their Params are equal.
type Params struct {
	// M is the number of bits of the filter, a multiple of 64.
	M uint64
	// K is the number of hash functions.
	K uint32
	// Stride is G: a block at depth d (1-based) is sampled when d%G == 0.
	Stride uint32
	// Head makes depths 1..Head always sampled, whatever the Stride.
	Head uint32
}

// Validate reports whether p is within the wire limits.
func (p Params) Validate() error {
	switch {
	case p.M < BlockBits || p.M > MaxFilterBits || p.M%BlockBits != 0:
		return fmt.Errorf("gossip: params: M %d is not a multiple of %d in [%d, %d]", p.M, BlockBits, BlockBits, MaxFilterBits)
	case p.K < 1 || p.K > MaxHashFuncs:
		return fmt.Errorf("gossip: params: K %d is not in [1, %d]", p.K, MaxHashFuncs)
	case p.Stride < 1 || p.Stride > MaxStride:
		return fmt.Errorf("gossip: params: Stride %d is not in [1, %d]", p.Stride, MaxStride)
	case p.Head > MaxHead:
		return fmt.Errorf("gossip: params: Head %d is above %d", p.Head, MaxHead)
	}
	return nil
}

// Sampled reports whether a block at the given 1-based depth is inserted into
// a summary with these Params: depth <= Head or depth a multiple of Stride.
func (p Params) Sampled(depth int) bool {
	if depth < 1 {
		return false
	}
	return depth <= int(p.Head) || depth%int(p.Stride) == 0
}

// sampledCount returns how many depths in 1..n are sampled.
func (p Params) sampledCount(n int) int {
	if n < 1 {
		return 0
	}
	h := min(int(p.Head), n)
	g := int(p.Stride)
	return h + n/g - h/g
}

// sampledAt returns the i-th (0-based) sampled depth in increasing order.
func (p Params) sampledAt(i int) int {
	h := int(p.Head)
	if i < h {
		return i + 1
	}
	g := int(p.Stride)
	return (h/g + 1 + (i - h)) * g
}

// SummaryConfig sets how a Builder sizes and samples summaries.
type SummaryConfig struct {
	// FalsePositiveRate is the target false-positive rate of one membership
	// test at the filter's current capacity, in (0, 0.5].
	FalsePositiveRate float64
	// ExpectedElements is the initial capacity in sampled hashes, and the
	// floor below which the capacity never shrinks.
	ExpectedElements int
	// Stride is G, the sampling stride over depths (see Params.Stride).
	Stride int
	// Head makes depths 1..Head always sampled (see Params.Head).
	Head int
	// MaxBits caps the filter size in bits; past it the false-positive rate
	// rises instead of the filter growing. At most MaxFilterBits.
	MaxBits uint64
}

// DefaultSummaryConfig returns a 1% false-positive rate, an initial capacity
// of 64 Ki sampled hashes, stride 4, head 1 and a 16 MiB cap.
func DefaultSummaryConfig() SummaryConfig {
	return SummaryConfig{
		FalsePositiveRate: 0.01,
		ExpectedElements:  1 << 16,
		Stride:            4,
		Head:              1,
		MaxBits:           MaxFilterBits,
	}
}

// Validate names the first field that is out of range.
func (c SummaryConfig) Validate() error {
	switch {
	case !(c.FalsePositiveRate > 0 && c.FalsePositiveRate <= 0.5):
		return fmt.Errorf("gossip: SummaryConfig.FalsePositiveRate %v is not in (0, 0.5]", c.FalsePositiveRate)
	case c.ExpectedElements < 1 || c.ExpectedElements > 1<<30:
		return fmt.Errorf("gossip: SummaryConfig.ExpectedElements %d is not in [1, 2^30]", c.ExpectedElements)
	case c.Stride < 1 || c.Stride > MaxStride:
		return fmt.Errorf("gossip: SummaryConfig.Stride %d is not in [1, %d]", c.Stride, MaxStride)
	case c.Head < 0 || c.Head > MaxHead:
		return fmt.Errorf("gossip: SummaryConfig.Head %d is not in [0, %d]", c.Head, MaxHead)
	case c.MaxBits < 64 || c.MaxBits > MaxFilterBits:
		return fmt.Errorf("gossip: SummaryConfig.MaxBits %d is not in [64, %d]", c.MaxBits, MaxFilterBits)
	}
	return nil
}

// params returns the Params of a filter sized for capacity sampled hashes:
// bloom's optimal m and k for the target rate, m rounded up to a whole word
// and capped at MaxBits.
func (c SummaryConfig) params(capacity int) Params {
	m, k := bloom.EstimateParameters(uint(capacity), c.FalsePositiveRate)
	// A blocked filter (all of a key's bits in one 512-bit block) has a
	// slightly higher false-positive rate than a classic one of the same
	// size; a tenth more bits buys it back.
	bitsM := (uint64(m)*11/10 + BlockBits - 1) / BlockBits * BlockBits
	maxM := c.MaxBits / BlockBits * BlockBits
	if bitsM > maxM {
		bitsM = maxM
	}
	if bitsM < BlockBits {
		bitsM = BlockBits
	}
	k = uint(math.Max(1, math.Min(float64(k), MaxHashFuncs)))
	return Params{M: bitsM, K: uint32(k), Stride: uint32(c.Stride), Head: uint32(c.Head)}
}
