// Command loadtest runs the project's load tests and benchmarks. Each
// subcommand has a line in the table in commands.go and a file of its own;
// run "loadtest help" for the list and "loadtest <command> -h" for flags.
//
// The index subcommand replays the Mooncake trace against cell/index and a
// naive baseline (package loadtest/indexbench):
//
//	go run ./cmd/loadtest index --json          # the full benchmark
//	go run ./cmd/loadtest index --quick         # under a minute, readable table
//	go run ./cmd/loadtest index --layout both   # block and paged layouts side by side
//
// The restart subcommand measures a cell's restart with the full trace's
// index state: restoring a snapshot against replaying every event into an
// empty index, each in child processes of this binary (package
// loadtest/restartbench):
//
//	go run ./cmd/loadtest restart --json        # full trace, 3 runs of each way
//
// Progress goes to stderr, the report to stdout. The default trace path is
// relative to the repository root.
package main
