// Package global is the sparse global tier (globald): it keeps a summary
// table of every cell (Bloom-filter prefix summaries and load, learned over
// gossip), finds the few cells that may hold a request's prefix, probes them
// for their exact answer, and hands the request to the chosen cell.
//
// Status: not built yet; the design is in the README's design section and
// the project's architecture notes. Only this package comment exists so that
// the repository layout is in place.
package global
