// Package reload applies files that change while a daemon runs (API key
// files, TLS certificates, gossip keyrings): a Watcher reads its files
// every interval and hands their contents to a load function when any of
// them changed and stayed so for one interval (so a file is never applied
// halfway through its rewrite). Polling the contents, rather than watching
// for events,
// works the same for a file rewritten in place, renamed over, or swapped
// through a symbolic link as Kubernetes does with mounted secrets, and
// costs one small read per file per interval.
package reload
