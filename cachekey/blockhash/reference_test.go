package blockhash

import (
	"bytes"
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// This file holds a naive reference implementation of the package: written
// for obviousness, not speed (every value goes through encoding/binary into a
// bytes.Buffer), and compared with the real one on random inputs.

// refChunk hashes a block's tokens as little-endian uint32 bytes.
func refChunk(tokens []uint32) uint64 {
	var buf bytes.Buffer
	for _, t := range tokens {
		if err := binary.Write(&buf, binary.LittleEndian, t); err != nil {
			panic(err)
		}
	}
	return xxh3.Hash(buf.Bytes())
}

// refMix hashes parent||chunk, little-endian, replacing zero by MixZero.
func refMix(parent, chunk uint64) uint64 {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, parent); err != nil {
		panic(err)
	}
	if err := binary.Write(&buf, binary.LittleEndian, chunk); err != nil {
		panic(err)
	}
	h := xxh3.Hash(buf.Bytes())
	if h == 0 {
		return uint64(MixZero)
	}
	return h
}

// refWriteString writes a uint64 length prefix and the string.
func refWriteString(buf *bytes.Buffer, s string) {
	if err := binary.Write(buf, binary.LittleEndian, uint64(len(s))); err != nil {
		panic(err)
	}
	buf.WriteString(s)
}

// refSeed encodes the keys field by field, as documented on appendKeys.
func refSeed(k Keys) uint64 {
	var buf bytes.Buffer
	refWriteString(&buf, "cellrouter/blockhash/seed/v1")
	buf.WriteByte(1)
	refWriteString(&buf, k.Model)
	buf.WriteByte(2)
	refWriteString(&buf, k.LoRA)
	buf.WriteByte(3)
	refWriteString(&buf, k.CacheSalt)
	buf.WriteByte(4)
	if err := binary.Write(&buf, binary.LittleEndian, uint64(len(k.MultimodalIDs))); err != nil {
		panic(err)
	}
	for _, id := range k.MultimodalIDs {
		refWriteString(&buf, id)
	}
	buf.WriteByte(5)
	refWriteString(&buf, k.RouteTemplate)
	buf.WriteByte(6)
	if k.HasVirtualLayer {
		buf.WriteByte(1)
		if err := binary.Write(&buf, binary.LittleEndian, k.VirtualLayer); err != nil {
			panic(err)
		}
	} else {
		buf.WriteByte(0)
	}
	h := xxh3.Hash(buf.Bytes())
	if h == 0 {
		return uint64(SeedZero)
	}
	return h
}

// refChain cuts tokens into full blocks one by one and chains their hashes.
func refChain(blockSize int, seed uint64, tokens []uint32) []uint64 {
	var out []uint64
	parent := seed
	for start := 0; start+blockSize <= len(tokens); start += blockSize {
		block := append([]uint32(nil), tokens[start:start+blockSize]...)
		parent = refMix(parent, refChunk(block))
		out = append(out, parent)
	}
	return out
}
