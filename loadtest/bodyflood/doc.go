// Package bodyflood measures what a flood of large request bodies costs a
// globald process: it starts the given globald binary as a child process
// with an API key file (as the README's Security section says), on free
// loopback ports and without cells, sends Concurrency authenticated chat
// requests of BodyBytes each at once, and reports the answers by status,
// the process's resident memory before, at its peak (VmHWM) and some time
// after, and how long the flood took. A globald without cells still reads,
// parses and salts each body before it answers 503 no_cell_available, so
// the peak is what buffering the bodies costs; with a buffered-bytes
// budget most of the flood is refused before its body is kept.
//
// It is the reproducible form of issue 22's "24 concurrent 30 MB bodies"
// and runs against any globald binary, old or new, so the two can be
// compared as separate processes (loadtest bodyflood --globald BIN).
package bodyflood
