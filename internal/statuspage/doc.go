// Package statuspage is the plumbing both daemons' status pages share: a
// server-rendered html/template layout around each daemon's content, the
// headers they are served with, the table of recent decisions, and
// helpers that write durations, bytes, counts and ratios for people.
//
// # Model
//
// A page is one GET /status on a daemon's HTTP address. Handler builds the
// daemon's data afresh for each request (Handler.Body), renders it with
// the daemon's Template (the base layout plus a "content" template the
// daemon defines) into a buffer, and only then writes it: a failure is a
// 500 in OpenAI's error shape, never half a page. The page reloads itself
// with <meta http-equiv="refresh"> every Config.Refresh; there is no
// script at all.
//
// # Security
//
// The page loads nothing: its one style sheet is inline and allowed by its
// SHA-256 in a strict Content-Security-Policy (default-src 'none'; no
// script, frames, forms or plug-ins), so it works offline and a name
// that slipped through escaping could still run nothing. html/template
// escapes every value by context (a pod named <script> is text), links
// are built with their parts escaped (DecisionPath, Config.TraceURL), and
// the page is served with nosniff, no-store, DENY framing and no
// referrer. The daemons mount Handler behind their control-plane guard
// (the admin scope, as /v1/*/state), so a 401 or 403 comes in OpenAI's
// shape from the guard; nothing here sees or prints a key.
//
// # Recent decisions
//
// Decision is the page's own, small view of one routing decision.
// Handler.Decisions is the seam to a daemon's record of decisions: nil
// means the daemon keeps none (the page says so). Each row links to the
// decision's explanation at /v1/<tier>/decisions/<id> and to its trace
// when Config.TraceURLTemplate is set.
package statuspage
