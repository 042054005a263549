// Package gossip is the memberlist wiring of cells and global replicas: node
// metadata, and the summary wire format (Bloom filters and roaring-bitmap
// deltas) that cells publish.
//
// Status: not built yet; only this package comment exists so that the
// repository layout is in place.
package gossip
