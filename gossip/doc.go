// Package gossip is how cells and global replicas know about each other:
// memberlist wiring and node metadata, and the coarse prefix summaries that
// cells publish (Bloom filters shipped as snapshots or roaring-bitmap deltas)
// with their load. The cell publishes; globald consumes. The package imports
// cachekey/blockhash for the Hash type and nothing of the cell or global tiers.
//
// # Summaries
//
// A cell's Summary is a Bloom filter over a sample of its chained block
// hashes. A chained hash stands for its whole prefix, so a hit for the hash
// at depth d says "this cell may hold the first d blocks". Only sampled
// depths are inserted: d <= Head or d a multiple of Stride (defaults Head 1,
// Stride 4), which divides the filter size by about Stride and costs at most
// Stride-1 blocks of precision, which the probe that follows recovers.
// Builder takes (hash, depth) pairs from what the cell can enumerate; a
// depth of 0 means unknown and the hash is kept anyway (bigger filter, never
// a missed match). Summary.Depth binary-searches the sampled depths of a
// request's chain; prefix closure (a cell holding block d holds its parents)
// makes hits monotone, so the search is exact up to false positives, which
// can only overestimate.
//
// Sizing: the Builder keeps a capacity (in sampled hashes) across
// generations and derives M and K from it and the target false-positive
// rate (bloom/v3's EstimateParameters). The capacity doubles when a
// generation outgrows it and halves when a generation falls below a quarter
// of it (never below ExpectedElements), so the filter's shape, and with it
// the ability to ship deltas, survives ordinary churn.
//
// Hashing: bit positions are derived directly from the chained hash (already
// a uniform xxh3 output), not by bloom/v3's Test, which re-hashes with
// murmur3 and takes a 64-bit modulo per probe (Depth over a 1000-block chain
// took about 1.1 us through bloom/v3, about 0.1 us this way). The filter is
// blocked: the hash picks one 512-bit block (multiply-shift range
// reduction) and all K positions lie in it, nine bits each from the hash's
// splitmix64 finaliser. A test is then one cache miss rather than K, which
// is what a search over 64 cells' filters, each larger than the caches,
// spends its time on; a tenth more bits makes up for the blocked layout's
// slightly higher false-positive rate. bloom/v3 still provides the sizing
// arithmetic; the filter's words are plain []uint64 in the bitset layout
// (bit i in word i/64, position i%64).
//
// # Generations
//
// Bloom filters cannot delete, so a cell rebuilds its summary from scratch
// every generation and Publisher numbers them. Generations are ordered by
// (Epoch, Gen): Epoch is the publisher's start time in nanoseconds, so a
// restarted cell that counts from 1 again still supersedes its old self.
// Publisher keeps the last few deltas (the roaring bitmap of bit positions
// that flipped between consecutive generations of equal shape) and answers
// "I hold (epoch, gen)" with the XOR of the deltas since then, or with a
// Snapshot when the peer is on another epoch, further back than the history,
// the shape changed, or the delta would not be smaller than the snapshot.
// Replica applies them on the receiving side: a message for a generation
// already held or passed is a no-op (so duplicates are harmless), and a delta
// that does not start at the held generation returns a *GapError
// (errors.Is ErrNeedSnapshot): ask for a snapshot. A property test checks
// that the delta path, a sparse delta path and the snapshot path give the
// same bits as a naive reference.
//
// # Wire format
//
// Every message starts with WireVersion and a type byte, then uvarints,
// length-prefixed strings and, for snapshots, raw little-endian words; a
// delta ends with roaring's portable serialisation. A header's load carries
// the cell's totals, its least loaded pod's active blocks (version 3) and its
// eight least loaded pods' (version 4, Load.Lightest). Decoders bound every
// length before allocating (strings by MaxCellIDLen and friends, filters by
// MaxFilterBits = 16 MiB, roaring container counts by the filter size),
// reject trailing bytes, never panic (fuzz tests), and wrap ErrMalformed.
// A cell's band waits (Load.Waits: how long a new request of each priority
// band would wait in its flow control) travel in a message of their own,
// BandLoad (type 8, no version bump), queued beside the header while any
// wait is not zero and once when they return to zero: an earlier node drops
// a message of an unknown type and keeps decoding headers, whose strict
// decoder would refuse extra bytes. A Table applies a replica's bands in
// (Epoch, Seq) order, keeps them across headers, drops them when the
// replica restarts, and stamps Entry.BandsUpdatedAt so readers can ignore
// waits a cell stopped refreshing. Push/pull state does not carry them.
// Node metadata (NodeMeta) is at most 328 bytes, inside memberlist's 512,
// and at most 459 with a gateway address (NodeMeta.GatewayAddr, an
// optional tagged section that nodes without a gateway leave out, so their
// bytes are those of earlier versions), before the models a cell serves (ModelSet, 8 bytes a model; SetModels
// advertises them as unknown when they do not fit).
//
// # Membership and transport
//
// Node wraps one memberlist instance. Cells and global replicas join one
// pool; the metadata carries the role, the cell id and the HTTP and gRPC
// addresses; SWIM failure detection (ProbeInterval, ProbeTimeout,
// SuspicionMult) turns a crashed node dead, which removes its cell from
// every Table. Gossip can be encrypted with Config.SecretKey, and its keys
// rotated with no node dropping out (ParseKeyring says how; SetKeyring
// applies a node's keyring file). Memberlist's
// event callbacks do not distinguish a clean leave from a death, so both
// show as StateDead.
//
// Summaries respect memberlist's size limits this way:
//
//   - Publish and SetLoad queue a Header (cell, epoch, gen, seq, load,
//     shape; under 100 bytes) on memberlist's broadcast queue, which
//     piggybacks it on UDP gossip to every node within a few
//     GossipIntervals; a newer header of the same cell replaces a queued
//     older one.
//   - A node whose Table entry is behind the announced generation sends the
//     cell a FetchRequest (what it holds) as a reliable TCP user message;
//     the cell answers the same way with a Delta or a Snapshot. A node also
//     fetches when a cell joins, and re-fetches every ResyncInterval while
//     behind, which covers lost messages. A GapError triggers a snapshot
//     fetch.
//   - Memberlist's push/pull (every PushPullInterval, and on join) carries
//     the cell's CellState (latest header and snapshot) over TCP as the
//     anti-entropy backstop, so a node that missed every header still
//     converges.
//
// So a new generation reaches a global replica in about one gossip round
// plus one TCP round trip. Snapshots are capped at 16 MiB, below memberlist's
// 20 MB limit on a TCP user message or push/pull state. Compression is off:
// Bloom bits near their design fill and roaring bitmaps do not compress.
//
// Table is the consumer side: one Entry per live cell (member info, summary,
// generation, announced generation, load, update times). Writers serialise
// on a mutex and publish an immutable sorted slice; Table.Snapshot is one
// atomic load, for candidate search on the hot path.
//
// # Rejoining
//
// Memberlist forgets a dead member for good: a node that crashed and came
// back without seeds (the first globald of a pool usually has none) was
// never found again, since the others used their seeds only at start. So
// every Node runs a rejoin loop (rejoin.go): every RejoinInterval, with a
// fifth of jitter either way, it joins the configured seeds that no live
// member answers at (its own address aside; a host name is resolved) and
// the last addresses of departed members (up to RememberMembers of them,
// for RememberFor each, the oldest forgotten first), backing off by
// doubling to RejoinMaxInterval while some do not answer. A restarted node
// refutes its own death as soon as a join reaches it. With
// JoinInBackground, Start leaves even the first join of the seeds to the
// loop. PoolStatus says where a node stands (members, alone, missing
// seeds), and PoolCollectors turns it into the cellrouter_gossip_*
// metrics.
//
// # Replicas
//
// Several nodes may serve one cell id (cell replicas, each named
// "cell/<id>/<replica>"). Each consumes every event and holds the same
// index, and each publishes its own summary generations under its own epoch,
// so headers, snapshots and deltas name the publishing node (Header.Node,
// since wire version 3) and a Table keeps, per cell, a set of Endpoints:
// one per live replica, each with its own Replica state, announced
// generation and load, fetched from that replica. The Entry merges them:
// Endpoints lists every live replica, the summary is that of the replica
// whose summary changed last (any replica's describes the cell; the most
// recently refreshed is the least stale), and the load is the one heard
// last (replicas share their load, so they agree). A replica's death
// (memberlist leave or dead, which look alike) removes its endpoint only;
// the cell leaves the Table with its last endpoint. A cell's own Table
// leaves out its sibling replicas: they are peers, not another cell.
//
// Peers (the other live replicas of the same cell, or the other global
// replicas) exchange opaque PeerMessages through memberlist user messages:
// SendPeers sends one UDP packet to each (best effort, fire and forget, up
// to MaxPeerBody bytes) or one TCP message each (reliable); an Observer
// that implements PeerReceiver gets them. The cell uses it for its shared
// active-request load and for drains (see package cell).
package gossip
