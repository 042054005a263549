// Package logging is the daemons' shared log plumbing: the --log-format
// (text or JSON) and --log-level flags every binary takes, and the access
// log, one line at info per data-plane request that says what came in and
// where it went.
//
// The access log is switchable and sampled (Config.Enabled,
// Config.Sample). A request that is not sampled costs one branch: no
// allocation, no wrapped writer. A sampled one gets an Entry that wraps
// the response writer to see its status and first byte, collects what the
// handler decided (route path, cell, pod, matched blocks, durations) and
// writes the line when the handler returns. Where the handler set the
// router's response headers (X-Cellrouter-Cell, X-Cellrouter-Pod,
// X-Cellrouter-Matched-Blocks), the entry reads the cell, pod and matched
// blocks from them, so the tiers' forwarding hooks stay as they are.
package logging
