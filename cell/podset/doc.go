// Package podset is the cell's live, versioned view of its engine pods: the
// one list the ZMQ dialer, the registry, the pipeline's candidates and the
// proxy targets all read.
//
// # Model
//
// A Set merges sources: the static pods of the configuration and each
// dynamic source (Kubernetes discovery) that publishes its whole current
// list with Set.Publish. A static pod wins over a discovered one of the same
// id. Every merge that changes something makes a new immutable Snapshot
// with the next version and swaps it in atomically: readers on the hot path
// (the router's candidates, the proxy's last check) load a pointer and read
// without a lock; a reader that caches (the candidate list) compares the
// version.
//
// A pod is either routable (Ready, not terminating: it takes new requests)
// or kept (not Ready, or terminating: no new requests, but its index entries
// and its event subscription stay while it may come back). A pod missing
// from the snapshot is removed: the cell stops its subscription and kills
// its index holders (the index's two-phase removal). A pod whose endpoints
// changed under the same id (a new pod IP) is a new generation: Diff reports
// it as replaced, and the cell clears the old generation's entries before
// it dials the new one.
//
// Diff is pure: two snapshots in, the changes out. Subscribers are told
// that something changed (a channel of capacity one, coalescing bursts) and
// diff the latest snapshot against the one they last handled, so a slow
// subscriber never sees a stale intermediate state, only the newest.
package podset
