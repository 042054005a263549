package grpcpub

import (
	"math"
	"strconv"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
)

// Validate checks a whole request against lim: the header (ValidateHeader)
// and every event. It returns a *ValidationError naming the first broken
// rule, or nil.
func Validate(req *eventsv1.PublishRequest, lim Limits) error {
	if err := ValidateHeader(req, lim); err != nil {
		return err
	}
	return validateEvents(req, lim)
}

// ValidateHeader checks the fields that identify the publisher and the
// batch: a non-empty pod, string lengths, a non-negative dp_rank, a finite
// non-negative ts and the number of events. A request that passes can be
// sequenced even if its events turn out to be invalid.
func ValidateHeader(req *eventsv1.PublishRequest, lim Limits) error {
	switch {
	case req.GetPod() == "":
		return invalid(ReasonEmptyPod, "pod", "empty, want the publishing pod's id")
	case len(req.GetPod()) > lim.MaxStringLen:
		return invalid(ReasonTooLong, "pod", "%d bytes, want at most %d", len(req.GetPod()), lim.MaxStringLen)
	case len(req.GetModel()) > lim.MaxStringLen:
		return invalid(ReasonTooLong, "model", "%d bytes, want at most %d", len(req.GetModel()), lim.MaxStringLen)
	case req.DpRank != nil && *req.DpRank < 0:
		return invalid(ReasonBadDPRank, "dp_rank", "%d, want >= 0", *req.DpRank)
	case math.IsNaN(req.GetTs()) || math.IsInf(req.GetTs(), 0) || req.GetTs() < 0:
		return invalid(ReasonBadTS, "ts", "%v, want finite seconds since the epoch", req.GetTs())
	case len(req.GetEvents()) > lim.MaxEventsPerRequest:
		return invalid(ReasonTooManyEvents, "events", "%d events, want at most %d", len(req.GetEvents()), lim.MaxEventsPerRequest)
	}
	return nil
}

// validateEvents checks every event of a request whose header is valid.
func validateEvents(req *eventsv1.PublishRequest, lim Limits) error {
	tokens := 0
	for i, ev := range req.GetEvents() {
		switch e := ev.GetEvent().(type) {
		case *eventsv1.KVEvent_BlockStored:
			if err := validateStored(i, e.BlockStored, lim); err != nil {
				return err
			}
			tokens += len(e.BlockStored.GetTokenIds())
			if tokens > lim.MaxTokensPerRequest {
				return invalid(ReasonTooManyTokens, eventField(i, "block_stored.token_ids"),
					"request has %d token ids up to here, want at most %d", tokens, lim.MaxTokensPerRequest)
			}
		case *eventsv1.KVEvent_BlockRemoved:
			if err := validateRemoved(i, e.BlockRemoved, lim); err != nil {
				return err
			}
		case *eventsv1.KVEvent_AllBlocksCleared:
		default:
			return invalid(ReasonEmptyEvent, eventField(i, "event"), "no event set, want one of block_stored, block_removed, all_blocks_cleared")
		}
	}
	return nil
}

// validateStored checks one BlockStored event.
func validateStored(i int, s *eventsv1.BlockStored, lim Limits) error {
	blocks := len(s.GetBlockHashes())
	bs := s.GetBlockSize()
	switch {
	case blocks == 0:
		return invalid(ReasonNoBlocks, eventField(i, "block_stored.block_hashes"), "empty, want at least one block")
	case blocks > lim.MaxBlocksPerEvent:
		return invalid(ReasonTooManyBlocks, eventField(i, "block_stored.block_hashes"), "%d blocks, want at most %d", blocks, lim.MaxBlocksPerEvent)
	case bs == 0 || uint64(bs) > uint64(lim.MaxBlockSize):
		return invalid(ReasonBadBlockSize, eventField(i, "block_stored.block_size"), "%d, want 1..%d", bs, lim.MaxBlockSize)
	case len(s.GetTokenIds()) > lim.MaxTokensPerRequest:
		return invalid(ReasonTooManyTokens, eventField(i, "block_stored.token_ids"), "%d token ids, want at most %d", len(s.GetTokenIds()), lim.MaxTokensPerRequest)
	case uint64(len(s.GetTokenIds())) != uint64(blocks)*uint64(bs):
		return invalid(ReasonTokenCountMismatch, eventField(i, "block_stored.token_ids"),
			"%d token ids, want %d (%d blocks of %d)", len(s.GetTokenIds()), uint64(blocks)*uint64(bs), blocks, bs)
	case len(s.GetLoraName()) > lim.MaxStringLen:
		return invalid(ReasonTooLong, eventField(i, "block_stored.lora_name"), "%d bytes, want at most %d", len(s.GetLoraName()), lim.MaxStringLen)
	case len(s.GetMedium()) > lim.MaxStringLen:
		return invalid(ReasonTooLong, eventField(i, "block_stored.medium"), "%d bytes, want at most %d", len(s.GetMedium()), lim.MaxStringLen)
	case len(s.GetExtraKeys()) > lim.MaxExtraKeysPerEvent:
		return invalid(ReasonTooManyExtraKeys, eventField(i, "block_stored.extra_keys"), "%d keys, want at most %d", len(s.GetExtraKeys()), lim.MaxExtraKeysPerEvent)
	case len(s.GetExtraKeys()) != 0 && len(s.GetExtraKeys()) != blocks:
		return invalid(ReasonExtraKeysCount, eventField(i, "block_stored.extra_keys"), "%d entries, want none or one per block (%d)", len(s.GetExtraKeys()), blocks)
	case s.GetGroupIdx() < 0:
		return invalid(ReasonBadGroupIdx, eventField(i, "block_stored.group_idx"), "%d, want >= 0", s.GetGroupIdx())
	case uint64(s.GetSlidingWindow()) > math.MaxInt:
		return invalid(ReasonBadSlidingWindow, eventField(i, "block_stored.sliding_window"), "%d, want at most %d", s.GetSlidingWindow(), math.MaxInt)
	}
	for j, k := range s.GetExtraKeys() {
		if len(k) > lim.MaxStringLen {
			return invalid(ReasonTooLong, eventField(i, "block_stored.extra_keys["+strconv.Itoa(j)+"]"), "%d bytes, want at most %d", len(k), lim.MaxStringLen)
		}
	}
	return nil
}

// validateRemoved checks one BlockRemoved event.
func validateRemoved(i int, r *eventsv1.BlockRemoved, lim Limits) error {
	blocks := len(r.GetBlockHashes())
	switch {
	case blocks == 0:
		return invalid(ReasonNoBlocks, eventField(i, "block_removed.block_hashes"), "empty, want at least one block")
	case blocks > lim.MaxBlocksPerEvent:
		return invalid(ReasonTooManyBlocks, eventField(i, "block_removed.block_hashes"), "%d blocks, want at most %d", blocks, lim.MaxBlocksPerEvent)
	case len(r.GetMedium()) > lim.MaxStringLen:
		return invalid(ReasonTooLong, eventField(i, "block_removed.medium"), "%d bytes, want at most %d", len(r.GetMedium()), lim.MaxStringLen)
	case r.GetGroupIdx() < 0:
		return invalid(ReasonBadGroupIdx, eventField(i, "block_removed.group_idx"), "%d, want >= 0", r.GetGroupIdx())
	}
	return nil
}

// eventField names a field of the i-th event.
func eventField(i int, field string) string {
	return "events[" + strconv.Itoa(i) + "]." + field
}
