package grpcpub

import (
	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
)

// Convert validates req against lim and, when it is valid, fills dst with
// the equivalent events.Batch: Seq is event_id, DPRank is -1 when dp_rank
// is absent, and a parent hash of 0 counts as none. dst's Events slice is
// reused (its capacity kept); the hash, token and extra-key slices of the
// events alias req's, so req must stay unchanged while dst is in use. On
// error dst's contents are unspecified.
func Convert(req *eventsv1.PublishRequest, lim Limits, dst *events.Batch) error {
	if err := Validate(req, lim); err != nil {
		return err
	}
	fill(req, dst, false)
	return nil
}

// clearEvent is the AllBlocksCleared the server puts in front of the first
// batch after an engine restart.
var clearEvent = events.Event{Kind: events.KindAllBlocksCleared}

// fill converts a validated request into dst, with an AllBlocksCleared in
// front when clearFirst is set.
func fill(req *eventsv1.PublishRequest, dst *events.Batch, clearFirst bool) {
	header(req, dst)
	evs := dst.Events[:0]
	if clearFirst {
		evs = append(evs, clearEvent)
	}
	for _, ev := range req.GetEvents() {
		switch e := ev.GetEvent().(type) {
		case *eventsv1.KVEvent_BlockStored:
			s := e.BlockStored
			parent := s.GetParentBlockHash()
			evs = append(evs, events.Event{
				Kind:          events.KindBlockStored,
				BlockHashes:   s.GetBlockHashes(),
				ParentHash:    parent,
				HasParent:     parent != 0,
				TokenIDs:      s.GetTokenIds(),
				BlockSize:     int(s.GetBlockSize()),
				LoRAName:      s.GetLoraName(),
				Medium:        events.Medium(s.GetMedium()),
				ExtraKeys:     blockKeys(s.GetExtraKeys()),
				GroupIdx:      int(s.GetGroupIdx()),
				SlidingWindow: int(s.GetSlidingWindow()),
			})
		case *eventsv1.KVEvent_BlockRemoved:
			r := e.BlockRemoved
			evs = append(evs, events.Event{
				Kind:        events.KindBlockRemoved,
				BlockHashes: r.GetBlockHashes(),
				Medium:      events.Medium(r.GetMedium()),
				GroupIdx:    int(r.GetGroupIdx()),
			})
		case *eventsv1.KVEvent_AllBlocksCleared:
			evs = append(evs, events.Event{Kind: events.KindAllBlocksCleared})
		}
	}
	dst.Events = evs
}

// header fills the batch fields that come from the request header.
func header(req *eventsv1.PublishRequest, dst *events.Batch) {
	dst.Pod = req.GetPod()
	dst.Model = req.GetModel()
	dst.DPRank = -1
	if req.DpRank != nil {
		dst.DPRank = int(*req.DpRank)
	}
	dst.Seq = req.GetEventId()
	dst.TS = req.GetTs()
}

// clearOnly fills dst with a batch of just an AllBlocksCleared for req's
// publisher, for a restart whose first batch is invalid.
func clearOnly(req *eventsv1.PublishRequest, dst *events.Batch) {
	header(req, dst)
	dst.Events = append(dst.Events[:0], clearEvent)
}

// blockKeys converts the per-block extra_keys strings of the gRPC form: ""
// is a block without extra keys, any other string the block's one key (a
// cache salt on a chain's first block; anything else is not mapped onto
// cache identity, see events.BlockKeys).
func blockKeys(keys []string) []events.BlockKeys {
	var out []events.BlockKeys
	for i, k := range keys {
		if k == "" {
			continue
		}
		if out == nil {
			out = make([]events.BlockKeys, len(keys))
		}
		out[i] = events.BlockKeys{{Kind: events.KeyString, Text: k}}
	}
	return out
}
