package events

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
)

// engineSim produces plausible random event streams for one holder.
type engineSim struct {
	rng    *rand.Rand
	pod    string
	rank   int
	model  string
	bs     int
	chunks [][]uint32 // token blocks to draw from, so that chains share blocks
	prefix map[uint64][]uint32
	lora   map[uint64]string
	ident  map[uint64]string // the extra identity (salt, images) of a prefix
	keys   []uint64
	seq    uint64
}

func newEngineSim(rng *rand.Rand, pod string, rank int, model string, bs int) *engineSim {
	e := &engineSim{rng: rng, pod: pod, rank: rank, model: model, bs: bs, prefix: map[uint64][]uint32{}, lora: map[uint64]string{}, ident: map[uint64]string{}}
	for i := 0; i < 5; i++ {
		c := make([]uint32, bs)
		for j := range c {
			c[j] = rng.Uint32N(50000)
		}
		e.chunks = append(e.chunks, c)
	}
	return e
}

// engineHash is the engine's (not the router's) name of a prefix.
func engineHash(lora string, prefix []uint32) uint64 {
	f := fnv.New64a()
	f.Write([]byte(lora))
	for _, t := range prefix {
		f.Write([]byte{byte(t), byte(t >> 8), byte(t >> 16), byte(t >> 24)})
	}
	return f.Sum64() | 1
}

func (e *engineSim) pick() (uint64, bool) {
	for len(e.keys) > 0 {
		i := e.rng.IntN(len(e.keys))
		k := e.keys[i]
		if _, ok := e.prefix[k]; ok {
			return k, true
		}
		e.keys[i] = e.keys[len(e.keys)-1]
		e.keys = e.keys[:len(e.keys)-1]
	}
	return 0, false
}

var media = []Medium{"", "GPU", "CPU", "disk"}

func (e *engineSim) event() Event {
	r := e.rng.IntN(100)
	switch {
	case r < 2:
		clear(e.prefix)
		e.keys = e.keys[:0]
		return Event{Kind: KindAllBlocksCleared}
	case r < 30:
		k, ok := e.pick()
		if !ok {
			break
		}
		ev := Event{Kind: KindBlockRemoved, BlockHashes: []uint64{k}}
		if e.rng.IntN(4) == 0 {
			ev.Medium = media[e.rng.IntN(len(media))]
		}
		if e.rng.IntN(3) == 0 {
			delete(e.prefix, k)
		}
		if e.rng.IntN(30) == 0 {
			ev.GroupIdx = 1
		}
		return ev
	}
	ev := Event{Kind: KindBlockStored, BlockSize: e.bs, Medium: media[e.rng.IntN(3)]}
	var prefix []uint32
	lora, ident := "", ""
	if k, ok := e.pick(); ok && e.rng.IntN(4) != 0 {
		ev.HasParent, ev.ParentHash = true, k
		prefix, lora, ident = slices.Clone(e.prefix[k]), e.lora[k], e.ident[k]
	} else if e.rng.IntN(3) == 0 {
		lora = "lora-a"
	}
	ev.LoRAName = lora
	if e.rng.IntN(25) == 0 {
		ev.HasParent, ev.ParentHash = true, e.rng.Uint64()|1 // never stored
	}
	// Extra keys as vLLM sends them: the adapter on every block (sometimes),
	// a cache salt on a chain's first block, a multimodal pair on the block
	// holding an image. They are part of the engine's hash, as in vLLM.
	withKeys := e.rng.IntN(3) == 0
	salted := !ev.HasParent && e.rng.IntN(6) == 0
	mmAt := -1
	if e.rng.IntN(12) == 0 {
		mmAt = e.rng.IntN(4)
	}
	for i, n := 0, 1+e.rng.IntN(4); i < n; i++ {
		c := e.chunks[e.rng.IntN(len(e.chunks))]
		prefix = append(prefix, c...)
		ev.TokenIDs = append(ev.TokenIDs, c...)
		var keys BlockKeys
		if lora != "" && withKeys {
			keys = append(keys, ExtraKey{Kind: KeyString, Text: lora})
		}
		if i == mmAt {
			keys = append(keys, ExtraKey{Kind: KeyOther, Text: `["img-1",3]`})
			ident += "|mm"
		}
		if i == 0 && salted {
			keys = append(keys, ExtraKey{Kind: KeyString, Text: "salt-1"})
			ident += "|salt"
		}
		if keys != nil && ev.ExtraKeys == nil {
			ev.ExtraKeys = make([]BlockKeys, n)
		}
		if ev.ExtraKeys != nil {
			ev.ExtraKeys[i] = keys
		}
		h := engineHash(lora+ident, prefix)
		ev.BlockHashes = append(ev.BlockHashes, h)
		if _, ok := e.prefix[h]; !ok {
			e.prefix[h] = slices.Clone(prefix)
			e.lora[h], e.ident[h] = lora, ident
			e.keys = append(e.keys, h)
		}
	}
	switch e.rng.IntN(40) {
	case 0:
		ev.SlidingWindow = 1024
	case 1:
		ev.GroupIdx = 1
	case 2:
		ev.TokenIDs = nil // a publisher that sends no token ids
	}
	return ev
}

// batches returns the engine's next n batches in publication order, with a
// restart now and then.
func (e *engineSim) batches(n int) []*Batch {
	var out []*Batch
	for i := 0; i < n; i++ {
		if e.rng.IntN(150) == 0 && e.seq > 0 {
			e.seq = 0
			clear(e.prefix)
			e.keys = e.keys[:0]
		}
		b := &Batch{Pod: e.pod, Model: e.model, DPRank: e.rank, Seq: e.seq, TS: 1}
		e.seq++
		for k := 1 + e.rng.IntN(3); k > 0; k-- {
			b.Events = append(b.Events, e.event())
		}
		out = append(out, b)
	}
	return out
}

// deliveries turns one engine's batches into a delivery order with
// duplicates, gaps and replays, as a lossy transport with replay gives them.
func deliveries(rng *rand.Rand, bs []*Batch) []*Batch {
	var out []*Batch
	for i := 0; i < len(bs); i++ {
		switch r := rng.IntN(100); {
		case r < 5 && i > 0:
			out = append(out, bs[rng.IntN(i)]) // a stale duplicate
		case r < 9 && i+2 < len(bs):
			// Lose bs[i]: bs[i+1] reveals the gap, then the replay brings
			// bs[i] and bs[i+1] again.
			out = append(out, bs[i+1], bs[i], bs[i+1])
			i++
			continue
		}
		out = append(out, bs[i])
	}
	return out
}

// randomLog interleaves the deliveries of several holders.
func randomLog(seed uint64, engineBS int, nBatches int) []*Batch {
	rng := rand.New(rand.NewPCG(seed, 7))
	engines := []*engineSim{
		newEngineSim(rng, "pod-a", -1, "m1", engineBS),
		newEngineSim(rng, "pod-b", 0, "m1", engineBS),
		newEngineSim(rng, "pod-b", 1, "m2", engineBS),
	}
	var queues [][]*Batch
	for _, e := range engines {
		queues = append(queues, deliveries(rng, e.batches(nBatches)))
	}
	var log []*Batch
	for {
		live := 0
		for _, q := range queues {
			live += len(q)
		}
		if live == 0 {
			return log
		}
		i := rng.IntN(len(queues))
		if len(queues[i]) == 0 {
			continue
		}
		log = append(log, queues[i][0])
		queues[i] = queues[i][1:]
	}
}
