// Package snapshot persists a cell's index state so that a restarted
// celld does not start empty: the exact blocks with their holders and
// tiers (package index), and per holder the last applied event sequence
// number and the engine-to-router hash map, the forest of engine blocks
// (package events). A restarted cell loads the newest valid snapshot and
// then catches up from each pod's replay socket after the saved number and
// from JetStream after the saved stream position.
//
// # Format
//
// A versioned binary file (format.go has the byte layout): a magic and the
// format version, a body, and a trailer with the body's length, its CRC32C
// and an end marker. The body starts with the identity of the cell that
// wrote it (cell id, default model, router block size and a fingerprint of
// the block hash function, and the index layout), which a loading cell must
// share: a foreign snapshot's hashes would never match, or match the wrong
// blocks. The paged index layout keeps each block's place in its chain
// (position and page), which the snapshot carries for it; the block layout
// keeps none, so a snapshot loads only into the layout it was taken from
// (a cell that switches layouts starts empty and catches up). Counts
// are checked against the bytes left before anything is allocated, so a
// hostile file costs at most its own size (FuzzDecode).
//
// # Consistency without stopping the world
//
// Write captures, in this order, the JetStream position, each holder under
// its own lock (sequence number and forest agree), and the index one shard
// at a time, while events keep flowing. The index part may therefore be
// newer than a holder's saved number, never older. Replaying a holder from
// the saved number plus one rewrites ops the index may already reflect;
// index writes are idempotent and each (pod, block, tier) is decided by the
// last write, so the result equals applying every event exactly once
// (TestRoundTripMatchesReference checks this against a reference state,
// and cell's catch-up test with real ZMQ replay). The forest is restored
// exactly as saved, so the events layer itself applies each event once. A
// slot that changed hands during the write (a pod died and its slot was
// reused) would misattribute blocks: Write notices and abandons the file
// (ErrPodsChanged).
//
// Learned holdings (speculative and approximate blocks) are not saved:
// speculative ones live two seconds, and approximate ones would need the
// learner's expiry state; a restarted cell relearns them from traffic.
//
// # Files
//
// WriteFile writes atomically (a temporary file in the same directory,
// fsync, rename, fsync of the directory) and keeps the newest N files.
// LoadNewest tries the files newest first and returns the first valid one
// with the refusals met on the way; Decode checks magic, version, checksum,
// identity and the whole structure before Restore changes anything, and the
// cell restores into a fresh index and applier that it discards if anything
// fails, so a snapshot is loaded whole or not at all.
//
// A folder belongs to one cell replica: LockDir takes an exclusive flock
// on its lock file for the life of the process (the kernel releases it
// when the process dies, SIGKILL included) and refuses a folder another
// process holds with ErrLocked, naming the holder the lock file records
// (pid, cell, replica, host, since). Two cells on one folder used to prune
// each other's files and delete each other's temporary files, so that a
// cell killed and restarted found nothing. File names also carry their
// writer (Owner: cell and replica), and Prune deletes only the writer's
// own files and temporary files (and unnamed ones of earlier versions),
// so even on a file system without flock no writer deletes another's.
// LoadNewest reads the newest valid file whoever wrote it.
//
// Restore registers the pods, then applies the blocks in batches of 16K ops
// while a second goroutine rebuilds the holders' forests (they touch
// different structures), which on two cores hides most of the forests'
// cost.
package snapshot
