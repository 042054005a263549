// Package global is the sparse global tier (globald): many cells behind one
// OpenAI-compatible endpoint, with bounded global state.
//
// # Model
//
// The global tier knows each cell only through what the cell gossips (see
// package gossip): a Bloom-filter summary of a coarse sample of its chained
// block hashes, and its load. For a request it:
//
//  1. hashes the prompt's tokens exactly as the cells do (same block size,
//     same seed: model and cache salt);
//  2. searches the summaries (Search, pure): each usable cell's estimated
//     prefix depth, best first, ties to the less loaded; at most MaxProbes
//     cells within Slack blocks of the best;
//  3. probes those cells in parallel with a deadline (CellService.Route,
//     which changes nothing in the cell) for their exact answer: the pod
//     they would pick, its matched depth and load;
//  4. chooses by cost (Choose, pure): prefill blocks left, the pick's load,
//     and the probe's round-trip time, which matters across regions;
//  5. hands the request to the chosen cell's data plane, whose own picker
//     makes the final choice, and to the next cells while no byte has
//     reached the client (the cell list ends with every other usable cell,
//     least loaded first).
//
// A request whose prefix no summary knows (a cold prompt, or a text prompt
// the global tier cannot tokenize) goes to one of two cells chosen by a
// stable hash of its first blocks (rendezvous hashing), the less loaded, so
// repeated cold prompts meet their cache; no probe is spent on it.
//
// Dead cells (memberlist's failure detection) and draining cells
// (DrainCell) leave the candidate set. A new cell that joins the gossip pool
// receives traffic as soon as its first summary arrives: nothing is
// reconfigured.
//
// The decision code (Search, Choose) is pure: a snapshot of cell views in,
// an order out; probing and hand-off live at the edges. Every request is one
// OpenTelemetry trace: global.request, global.summary_lookup, one
// global.probe per probed cell, global.handoff, and the cell's spans under
// it (W3C context crosses the gRPC probe and the HTTP hand-off). The gRPC
// server answers server reflection, and the HTTP server serves the OpenAPI
// document of the REST control plane at /openapi/global.swagger.json.
//
// Dependencies: global uses cell/blockhash (hashing), cell/proxy (the relay,
// shared with the cell), cell/telemetry and api/openai, never the cell
// daemon itself.
package global
