// Package memlimit sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit) from the memory limit of the container a daemon
// runs in, so that the garbage collector works harder as the process nears
// its limit instead of letting the kernel kill it, and gives memory back
// to the operating system after a burst (the runtime's scavenger returns
// freed pages promptly while the heap is near the limit).
//
// The container's limit is read from the cgroup v2 file memory.max, or,
// on a cgroup v1 host, memory.limit_in_bytes, of the process's own cgroup
// (found in /proc/self/cgroup) or at the cgroup mount's root. The Go limit
// is a fraction of it (Config.Ratio, 0.9 by default), leaving the rest to
// memory the runtime does not count (thread stacks, cgo). An operator's
// GOMEMLIMIT wins: the runtime has applied it already and Apply leaves it.
// Without a cgroup limit ("max", or a v1 limit that is really "no limit")
// nothing is set.
package memlimit
