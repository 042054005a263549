package blockhash_test

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// Example hashes a prompt into chained block hashes, then continues the
// chain from a known parent, as an engine event reporting new blocks would.
func Example() {
	h, err := blockhash.NewHasher(4)
	if err != nil {
		panic(err)
	}
	seed := blockhash.Seed(blockhash.Keys{Model: "llama-3.1-8b", CacheSalt: "tenant-a"})

	prompt := []blockhash.Token{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	hashes := h.Chain(seed, prompt, make([]blockhash.Hash, 0, h.NumBlocks(len(prompt))))
	fmt.Println("full blocks:", len(hashes)) // Tokens 9 and 10 form a partial block.

	// The engine then stores one more block after the first two.
	more := h.Extend(hashes[len(hashes)-1], []blockhash.Token{9, 10, 11, 12}, nil)
	whole := h.Chain(seed, []blockhash.Token{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, nil)
	fmt.Println("extend matches chain:", more[0] == whole[2])

	// Another tenant's salt names different blocks for the same tokens.
	other := blockhash.Seed(blockhash.Keys{Model: "llama-3.1-8b", CacheSalt: "tenant-b"})
	fmt.Println("other tenant shares a block:", h.Chain(other, prompt, nil)[0] == hashes[0])

	// A looped transformer at route step 2 on physical block 3 of 12.
	fmt.Println("virtual layer:", blockhash.VirtualLayer(2, 12, 3))
	// Output:
	// full blocks: 2
	// extend matches chain: true
	// other tenant shares a block: false
	// virtual layer: 27
}
