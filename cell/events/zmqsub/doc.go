// Package zmqsub is the cell's ZMQ transport for the KV events vLLM and
// SGLang engines publish: it subscribes to engines' PUB sockets, decodes
// each message with package vllmwire and feeds the batches to a Sink (the
// events.Applier), repairing sequence gaps through the engines' replay
// sockets.
//
// # Sockets and goroutines
//
// A Subscriber dials one SUB socket per configured Endpoint and, with
// Config.Bind, binds one SUB socket that engines connect to. Every socket
// subscribes to every topic. A dial socket has one goroutine that owns it:
// it receives, decodes into a reused Batch, applies, and runs the replays a
// batch calls for, in order, so the batches of a publisher reach the Sink
// from one goroutine in sequence order (as the Sink requires; a publisher
// must not be reachable through two sockets). The Bind socket, which all
// its engines share, has a receiving goroutine that only reads each
// message's topic and hands the message to its pod's goroutine, with a
// queue of Config.QueueDepth messages (bind.go): a replay (a gap, a
// catch-up) holds up its own pod only, never the others. Run blocks until
// its context ends and every goroutine has stopped. A dial socket whose
// connection is lost is closed and redialed with exponential backoff (zmq4
// does not reconnect SUB sockets reliably by itself).
// SUB sockets reach tcp:// endpoints through a transport that buffers each
// connection's reads (transport.go): zmq4 reads every frame header and body
// with its own call, several system calls per message otherwise.
//
// # Who published a message
//
// A topic is free-form: vLLM's default is the empty string, deployments
// pick their own, and this project's convention is kv@<pod>@<model>.
//
//   - On a dial socket whose Endpoint names its Pod, every message is that
//     pod's, whatever the topic: the cell dialed the engine, so it knows
//     who it is. The model is the Endpoint's, else the one a topic of the
//     form <TopicPrefix><pod>@<model> names, else none (the sink applies
//     its default). A data-parallel rank missing from a batch is the
//     Endpoint's Rank (vLLM binds rank r on the base ports plus r).
//   - On the Bind socket, and on a dial socket without Pod, the topic must
//     name the pod: <TopicPrefix><pod>[@<model>] (vllmwire.SplitTopic; the
//     prefix may be empty).
//
// A message whose pod cannot be told is dropped, counted under "topic" and
// logged at a bounded rate with its topic: nothing is filtered away unseen.
// One whose topic names a pod Config.KnownPod refuses is dropped the same
// way under "unknown_pod", before the Subscriber keeps any state for it.
//
// # Who may connect
//
// ZMQ authenticates nobody. With Config.AllowedSources the Bind socket's
// listener closes every connection from a source address outside those
// networks as it is accepted, before the ZMTP greeting (acl.go: zmq4 gives
// no peer address per message, but asks the socket's transport to listen
// with the socket's context, which carries the filter).
//
// Messages that do not decode are counted by vllmwire.Reason label, logged
// at most once per Config.LogEvery per reason, and dropped.
//
// # Replay
//
// vLLM's replay socket is a ROUTER: the client sends the 8-byte big-endian
// start seq and receives [seq, payload] for every batch still buffered (vLLM
// keeps 10,000) from there on, ended by seq ReplayEndSeq and an empty
// payload. The Subscriber uses a short-lived DEALER per replay, sends an
// empty delimiter before the seq (vLLM's socket expects a REQ peer's
// framing) and accepts replies with or without it. A replay that goes
// Config.ReplayTimeout without a frame fails.
//
// The replay stream carries no topic: the pod and model of a replayed batch
// are those of the stream it was asked for. In dial mode the replay socket
// is the Endpoint's; in bind mode it is looked up by pod (ResolveReplay,
// ReplayEndpoints, ReplayTemplate), with the port offset by the batch's
// data-parallel rank.
//
// # When the Subscriber replays
//
//   - Gap: the Applier returns a *events.GapError; the range is replayed
//     and the batch applied again. If no replay socket is known, the replay
//     fails or it does not cover the gap, the gap is given up
//     (Applier.GiveUp clears the holder, which stays visible in the
//     applier's GiveUps and Clears counters) and the batch becomes the
//     holder's new baseline.
//   - First contact: a cell that starts (or restarts) with an empty index
//     meets engines mid-stream. The first message of a holder on a
//     connection, numbered above 0, triggers a replay from seq 0 before it
//     is applied, so the cell rebuilds each pod's cache from what the engine
//     still buffers; what the engine no longer buffers is lost (the index
//     then under-reports that pod's cache, which only costs cache hits).
//     Endpoints that name their Pod are caught up at connection instead,
//     before Ready, under the Endpoint's Model (none: the sink's default).
//   - Restored from a snapshot: a holder the sink restored (Resumer) is
//     caught up from the number after the snapshot's instead of from 0, at
//     connection for endpoints that name their pod, else at its first
//     message. A first live number at or below the snapshot's means the
//     engine restarted while the cell was down: the holder is caught up
//     from 0 as after a restart. (An engine that restarted and published
//     more batches than the snapshot's number before the cell came back
//     cannot be told from one that went on, as in bind mode below.)
//   - Model change: replayed batches carry no topic, so a catch-up at
//     connection files them under the Endpoint's model. If the first live
//     message's topic names another model, the holder is reset
//     (Sink.ResetHolder) and the buffer replayed again under that model:
//     filed under the wrong one, the blocks would never match, and their
//     live copies would be dropped as duplicates.
//   - Reconnection (dial mode): the engine may have restarted while the
//     connection was down, so each holder is caught up again from seq 0.
//     If the engine did not restart, the applier sees seq 0 again and
//     rebuilds the holder from the replay (counted as a restart there): more
//     work, same result.
//   - Restart without seq 0: live numbers of one connection only go up; a
//     number at or below the last one means the engine restarted and its
//     first batches were lost (ZMQ drops what a PUB sends before the
//     subscription reaches it). The holder is caught up from seq 0 and, if
//     the replay does not start at 0, the applier is told of the restart
//     with an empty batch numbered 0.
//
// In bind mode connections are invisible, so an engine that restarts and
// publishes more batches than the cell last saw before its first message
// reaches the cell cannot be told from a gap; the replay then repairs
// "the gap" with the new engine's batches on top of the old state. Dial mode
// has no such blind spot.
//
// # Counters and readiness
//
// Counters are plain atomics (no metrics library): messages, drops
// by reason (undecodable, topic, queue_full, publishers), replays
// requested, succeeded and failed, batches replayed,
// gaps given up, inferred restarts, connections. Ready is closed when every
// socket made its first attempt (see Subscriber.Ready).
package zmqsub
