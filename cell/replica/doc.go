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
// Being fire and forget, a message can be lost: a lost start means the
// peer never counts that request (its done is then ignored), a lost done
// would leave it counted. Three bounds keep the error from growing: a
// peer's ticket expires TTL after its start or first token (Config.TTL,
// default 5 minutes, longer than almost every request); all of a peer's
// tickets are dropped the moment memberlist declares it dead or gone; and
// every batch carries its sender's run (a start time), so the tickets of a
// replica that restarted under the same name are dropped at its first
// batch, even when it came back before memberlist noticed it was gone.
//
// # Drains
//
// A drain (or undrain) of a pod issued at one replica is sent to the
// others reliably (one TCP user message each) and applied there as if
// issued locally; globald replicas send each other the drain of a cell the
// same way. A replica that starts later does not learn earlier drains:
// issue them again, or at every replica (documented in the README).
package replica
