package events

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// validateBatch checks b's shape without looking at any state, so that a
// batch is rejected whole before anything of it is applied. It returns an
// error wrapping ErrInvalid that names the first bad event.
func validateBatch(b *Batch) error {
	if b.Pod == "" {
		return fmt.Errorf("%w: batch without pod", ErrInvalid)
	}
	if b.DPRank < -1 {
		return fmt.Errorf("%w: DPRank %d", ErrInvalid, b.DPRank)
	}
	for i := range b.Events {
		if err := validateEvent(&b.Events[i]); err != nil {
			return fmt.Errorf("%w: event %d (%s): %s", ErrInvalid, i, b.Events[i].Kind, err)
		}
	}
	return nil
}

// validateEvent checks one event's shape; the error text is a bare reason.
func validateEvent(ev *Event) error {
	if ev.GroupIdx < 0 {
		return fmt.Errorf("group %d", ev.GroupIdx)
	}
	switch ev.Kind {
	case KindBlockStored:
		if len(ev.BlockHashes) == 0 {
			return fmt.Errorf("no block hashes")
		}
		if ev.BlockSize < blockhash.MinBlockSize || ev.BlockSize > blockhash.MaxBlockSize {
			return fmt.Errorf("block size %d", ev.BlockSize)
		}
		if len(ev.TokenIDs) != 0 && (len(ev.TokenIDs)%ev.BlockSize != 0 || len(ev.TokenIDs)/ev.BlockSize != len(ev.BlockHashes)) {
			return fmt.Errorf("%d tokens for %d blocks of %d", len(ev.TokenIDs), len(ev.BlockHashes), ev.BlockSize)
		}
		for _, h := range ev.BlockHashes {
			if h == 0 {
				return fmt.Errorf("zero block hash")
			}
		}
		if len(ev.ExtraKeys) != 0 && len(ev.ExtraKeys) != len(ev.BlockHashes) {
			return fmt.Errorf("%d extra-key entries for %d blocks", len(ev.ExtraKeys), len(ev.BlockHashes))
		}
		if ev.SlidingWindow < 0 {
			return fmt.Errorf("sliding window %d", ev.SlidingWindow)
		}
	case KindBlockRemoved, KindAllBlocksCleared:
	default:
		return fmt.Errorf("unknown kind %d", ev.Kind)
	}
	return nil
}
