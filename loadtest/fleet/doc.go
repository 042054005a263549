// Package fleet starts a whole local cellrouter in one process: simulated
// engine pods (package enginesim), a cell per group of pods dialling their
// KV event sockets, and a global router the cells join over gossip. It is
// what `globald --demo` runs, and what tests and benchmarks use to get a
// realistic two-tier system on 127.0.0.1 with no external service.
package fleet
