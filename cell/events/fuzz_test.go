package events

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// byteSource is a rand.Source that replays fuzz input, then continues with
// a splitmix64 sequence (a constant source would make rand's rejection
// sampling loop forever).
type byteSource struct {
	data []byte
	x    uint64
}

func (s *byteSource) Uint64() uint64 {
	if len(s.data) >= 8 {
		v := binary.LittleEndian.Uint64(s.data)
		s.data = s.data[8:]
		return v
	}
	s.data = nil
	s.x += 0x9e3779b97f4a7c15
	z := s.x
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// FuzzApplyBatch drives the Applier with fuzz input in two ways: as the
// random choices of engine simulations (consistent engines, lossy delivery),
// compared with the reference model; and as raw batches of arbitrary
// hashes, parents, sizes and kinds, which must never panic and must only
// fail with known drop reasons.
func FuzzApplyBatch(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte("some seed bytes for the engine simulation, long enough to drive a few batches"))
	seed := make([]byte, 512)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range seed {
		seed[i] = byte(r.Uint32())
	}
	f.Add(seed)
	f.Fuzz(fuzzApply)
}

// fuzzApply is FuzzApplyBatch's body.
func fuzzApply(t *testing.T, data []byte) {
	{
		if len(data) > 4096 {
			return
		}
		// Consistent engines against the reference.
		rng := rand.New(&byteSource{data: data})
		ebs := []int{2, 4, 8}[rng.IntN(3)]
		rbs := []int{2, 4, 8, 3}[rng.IntN(4)]
		ix := newTestIndex(t)
		a := newTestApplier(t, ix, rbs)
		ref := newRefModel(rbs, DefaultConfig().MaxBlocksPerPod)
		for _, e := range []*engineSim{newEngineSim(rng, "a", -1, "m", ebs), newEngineSim(rng, "b", 3, "m", ebs)} {
			for _, b := range deliveries(rng, e.batches(1+rng.IntN(40))) {
				err := a.ApplyBatch(context.Background(), b)
				if _, ok := ReasonOf(err); err != nil && !ok {
					t.Fatalf("unexpected error %v", err)
				}
				ref.apply(b)
			}
		}
		compareIndex(t, ix, ref.expected(t, ix), "fuzzed engines")

		// Raw batches.
		raw := &byteSource{data: data}
		rr := rand.New(raw)
		a2 := newTestApplier(t, newTestIndex(t), 1+rr.IntN(8))
		for i := 0; i < 30 && len(raw.data) > 0; i++ {
			b := &Batch{Pod: []string{"", "p", "q"}[rr.IntN(3)], DPRank: rr.IntN(4) - 2, Seq: uint64(rr.IntN(6))}
			for k := rr.IntN(4); k > 0; k-- {
				ev := Event{Kind: Kind(rr.IntN(5)), BlockSize: rr.IntN(5), GroupIdx: rr.IntN(3) - 1,
					ParentHash: uint64(rr.IntN(6)), HasParent: rr.IntN(2) == 0, SlidingWindow: rr.IntN(3) - 1,
					Medium: media[rr.IntN(len(media))]}
				for n := rr.IntN(4); n > 0; n-- {
					ev.BlockHashes = append(ev.BlockHashes, uint64(rr.IntN(6)))
				}
				for n := rr.IntN(12); n > 0; n-- {
					ev.TokenIDs = append(ev.TokenIDs, uint32(rr.IntN(3)))
				}
				for n := rr.IntN(5) - 1; n > 0; n-- {
					var keys BlockKeys
					for m := rr.IntN(3); m > 0; m-- {
						keys = append(keys, ExtraKey{Kind: KeyKind(rr.IntN(4)), Text: []string{"", "s", "lora"}[rr.IntN(3)], Int: int64(rr.IntN(3))})
					}
					ev.ExtraKeys = append(ev.ExtraKeys, keys)
				}
				if rr.IntN(2) == 0 {
					ev.LoRAName, ev.LoRAID = "lora", int64(rr.IntN(3))
				}
				b.Events = append(b.Events, ev)
			}
			err := a2.ApplyBatch(context.Background(), b)
			if _, ok := ReasonOf(err); err != nil && !ok {
				t.Fatalf("unexpected error %v", err)
			}
		}
	}
}
