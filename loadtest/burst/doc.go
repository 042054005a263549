// Package burst measures what speculative entries are for: a burst of N
// requests sharing a new long prefix, arriving within a few tens of
// milliseconds, sent through a cell (package cell) in front of a simulated
// fleet (package loadtest/enginesim).
//
// An engine publishes a prompt's BlockStored event when its prefill ends,
// hundreds of milliseconds after the router chose it. Without speculative
// entries (the "exact" run) every request of the burst arrives before that
// event, finds no pod holding the prefix and goes by load alone, so several
// pods prefill the same prefix. With them (the "speculative" run) the first
// request's blocks count as its pod's from the moment it is routed, and the
// others follow it, unless the load term of the cost sends some elsewhere.
//
// Each run starts a cold fleet and a fresh cell, then sends the N requests
// (the shared prefix plus a few tokens of their own) evenly spread over the
// window, and reads from each answer which pod served it and how many of
// its prompt tokens were cached. A pod prefilled the prefix when some
// request it served computed at least one block of it; prefill tokens are
// the prompt tokens the engines did not find cached. The fleet and cost
// model are those of loadtest compare (the same timing model and overlap
// weight).
package burst
