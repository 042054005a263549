package gossip

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// randChain returns n random chained hashes (chain[i] is at depth i+1). Real
// chained hashes are xxh3 outputs, so uniform random values stand in for them.
func randChain(r *rand.Rand, n int) []blockhash.Hash {
	c := make([]blockhash.Hash, n)
	for i := range c {
		c[i] = blockhash.Hash(r.Uint64() | 1)
	}
	return c
}

// mustBuilder returns a Builder for cfg or fails the test.
func mustBuilder(t testing.TB, cfg SummaryConfig) *Builder {
	t.Helper()
	b, err := NewBuilder(cfg)
	if err != nil {
		t.Fatalf("NewBuilder(%+v): %v", cfg, err)
	}
	return b
}

// eventually polls cond until it holds or the deadline passes; it never
// sleeps for synchronisation beyond the polling period.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// uint64Chain is a chain kept in a test's pool of cached prefixes.
type uint64Chain = []blockhash.Hash

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }
