// Package replica lets the replicas of one cell act as one: they share
// their active-request load and their drains over the gossip pool they
// already join.
//
// Several celld processes with the same cell id each consume every KV
// event (each its own ZMQ subscriber, JetStream durable consumer or gRPC
// stream), so each holds the full index; what they would not know is the
// requests the others routed. A Sharer listens to its cell's load tracker
// and sends every change of a local ticket (start with its blocks, first
// token, done) to the peer replicas, fire and forget, the way the
// reference KV router syncs "add request / prefill done / free" between
// its replicas; on the receiving side it applies them to the tracker with
// the sending replica as origin (load.Tracker.ApplyRemote). Their load
// predictions then agree up to one flush interval plus one packet's
// latency.
//
// # The channel: memberlist user messages
//
// The changes travel as gossip.PeerMessages on the memberlist pool the
// cell joins anyway, batched every FlushInterval into UDP packets of at
// most gossip.MaxPeerBody bytes (SendPeers best effort). NATS core would
// do too when NATS is configured, but it is optional (ZMQ and gRPC fleets
// have none), while a cell with replicas must be in the pool for the
// global tier to see its endpoints; the pool also says when a peer dies,
// which is what bounds a dead replica's leaked load. So one channel
// serves every deployment, and no NATS subject, permission or reconnect
// logic is added.
//
// Being fire and forget, a message can be lost: a lost start would mean
// the peer never counts that request, a lost done that it counts it too
// long. So every ResyncInterval (1s) a replica sends every ticket it has
// in flight again, as a load.OpLive change with its sizes and whether its
// first token came: a peer starts a ticket it lacks, marks a first token
// it missed, and renews the ticket's lease. A ticket of a resyncing peer
// expires a Lease (5s) after its last news, so a lost done costs at most
// that; a replica that joins late learns its peers' requests in flight
// at their next resync. The resync follows a flush of the pending
// changes, so a peer sees a ticket's live state after its older changes;
// a done overtaken by a resync on the wire would bring the ticket back
// for one lease, which only a reordering network does.
//
// Three more bounds keep the error from growing: all of a peer's tickets
// are dropped the moment memberlist declares it dead or gone; every batch
// carries its sender's run (a start time), so the tickets of a replica
// that restarted under the same name are dropped at its first batch, even
// when it came back before memberlist noticed it was gone; and a peer
// that never resyncs (a celld from before resyncs, during a rolling
// upgrade) has its tickets expire TTL (5 minutes) after their last
// change, since nothing would renew a lease. Such a peer counts the live
// changes as malformed bodies and ignores them: they travel in bodies of
// their own, so its other changes still apply.
//
// Cost: a resync sends every request in flight to every peer, about ten
// bytes each plus its pod's name and template. BenchmarkResync: 2,000
// requests on pods named like "pod-017" take 34 KB (17 bytes each, in
// packets of at most gossip.MaxPeerBody) and about 1.4 ms of one core to
// snapshot and encode, once a second.
//
// # Drains
//
// A drain (or undrain) of a pod issued at one replica is sent to the
// others reliably (one TCP user message each) and applied there as if
// issued locally; globald replicas send each other the drain of a cell the
// same way. A replica that starts later does not learn earlier drains:
// issue them again, or at every replica (documented in the README).
package replica
