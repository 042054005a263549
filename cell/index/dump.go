package index

import "sort"

// DumpEntry is one block of a Dump.
type DumpEntry struct {
	Hash    BlockHash
	Holders HostBitmap
	// Pos and Page place the block in its chain (see Op); the block layout
	// does not keep them and leaves them zero.
	Pos  int32
	Page BlockHash
}

// Dump returns every block with its holders, sorted by hash: a canonical
// form for comparing two indexes in tests and tools. It locks each shard in
// turn and costs a full copy; it is not for hot paths.
func (ix *Index) Dump() []DumpEntry {
	var out []DumpEntry
	if ix.pshards != nil {
		for i := range ix.pshards {
			ix.pshards[i].forEach(func(page uint64, pos int64, k uint64, b HostBitmap) {
				out = append(out, DumpEntry{Hash: BlockHash(k), Holders: b, Pos: int32(pos), Page: BlockHash(page)})
			})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Hash < out[j].Hash })
		return out
	}
	for i := range ix.shards {
		ix.shards[i].forEach(func(k uint64, b HostBitmap) {
			out = append(out, DumpEntry{Hash: BlockHash(k), Holders: b})
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Hash < out[j].Hash })
	return out
}
