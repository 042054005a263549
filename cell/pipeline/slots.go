package pipeline

import (
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// The slots the in-tree plug-ins share. A plug-in may declare its own.
var (
	// Tokens are the prompt's token ids.
	Tokens = NewSlot[[]uint32]("tokens")
	// BlockHashes are the prompt's chained block hashes.
	BlockHashes = NewSlot[[]blockhash.Hash]("block-hashes")
	// Match is the index's answer for BlockHashes.
	Match = NewSlot[*index.MatchResult]("match")
	// SessionKey identifies the client session (from a header).
	SessionKey = NewSlot[string]("session-key")
	// HashKey is a stable hash of the request's first blocks, for
	// consistent-hash picking.
	HashKey = NewSlot[uint64]("hash-key")
	// PrefillPick is the candidate the prefill selector chose; the
	// framework sets it for decode profiles.
	PrefillPick = NewSlot[*Candidate]("prefill-pick")
)
