// Package failover is the failover suite behind `loadtest failover`: it
// starts a fleet of real processes on 127.0.0.1 (simulated engine pods with
// KV events, two cells of two celld replicas each, two globald), replays a
// Mooncake trace through the global endpoints with bounded concurrency, and
// injects faults in turn: SIGKILL a cell replica, SIGKILL a globald,
// SIGKILL an engine pod (each restarted after Config.RestartAfter), and
// SIGTERM a cell replica while streams are in flight (restarted too);
// SIGSTOP a cell replica, and a pod, for Config.FreezeFor and SIGCONT them
// (a frozen process keeps its sockets and answers nothing); and flood one
// pod's KV events into its cell's ZMQ bind sockets from a hostile
// publisher (Config.FloodBlocks distinct blocks; the cells run with
// index.max_blocks at Config.IndexMaxBlocks), measuring the blocks the
// first replica's index keeps for the other pods and whether a fresh
// prompt sent three times is matched afterwards.
//
// The same replay runs twice, on two fresh fleets: once with no fault (the
// baseline) and once with the faults, at the same offsets from the start.
// Per fault the suite reports, over the Window after it: the requests that
// failed before their first byte (target 0), the streams cut after it,
// detect_s (seconds until traffic stops going to the dead process: both
// globald list the cell with one endpoint fewer; the client's balancer
// took the globald out; every replica of the pod's cell marks it dead; for
// a freeze, also an ejection by every globald or replica), ready_s
// (seconds from the restart or the SIGCONT until the process serves again: both
// globald list the replica again; the globald answers /readyz and the
// balancer took it back; the pod is ready at every replica), and the
// cached-token ratio of the window against the baseline's same window,
// the longest wait for a first byte (max_first_byte_ms) and the streams that
// stalled (an event gap of Config.StallGap or more, or an error event that
// ended them).
//
// The client stands in for the load balancer in front of globald: round
// robin over the globald it believes up, a refused or reset connection
// (nothing received) marks one down and the request is sent to the next
// (as a load balancer's connect-failure retry does), and a /readyz check
// every 100ms takes it back. Requests are streamed (include_usage), so a
// cut after the first byte is told apart from a failure before it.
//
// Process hygiene: binaries are built with `go build` into a temporary
// directory (or taken from Config.BinDir); every process runs in its own
// process group with the parent-death signal set (Linux), is stopped with
// SIGTERM then SIGKILL when the suite ends, fails or is interrupted, and its
// output goes to a log file in the temporary directory (kept when the
// suite fails, for diagnosis). Every wait is bounded in time.
package failover
