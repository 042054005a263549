// Package pipeline is the cell's routing framework: the decision layer
// that turns a request and the cell's pods into a routing plan.
//
// # Model
//
// A decision runs five stages in a fixed order:
//
//	Prepare  compute request facts once (token ids, block hashes, the index's prefix match)
//	Filter   drop pods that must not take the request (dead, wrong role, busy)
//	Score    rate the remaining pods; a profile weights and sums the scorers
//	Pick     order the pods: the pick first, then the fall-backs for retries
//	Execute  carry the plan out (the cell's executor: proxy, or prefill then decode)
//
// Plug-ins exchange data only through typed slots on the routing Context
// (Slot[T], declared once with a name). Each plug-in declares the slots it
// reads and writes; a profile (which plug-ins, in which order, with which
// weights and parameters, from YAML) is validated when it is built: every
// slot read has a writer earlier in the run order, no slot has two writers,
// every plug-in a plug-in requires is present and earlier, requirements
// have no cycle, every plug-in sits in a stage it implements. A failed
// check is a ValidationError naming the profile, the plug-in and the slot,
// and stops the daemon.
//
// A Selector runs Prepare..Pick under one profile and returns a Decision. A
// Workflow composes selectors into a Plan: one dispatch, or prefill then
// decode, where the decode selector sees the prefill pick (PrefillPick).
// Selection is pure: it reads the request, the candidates and an injected
// random source, and changes nothing else, which is what lets the global
// tier probe a cell's decision without side effects.
//
// Departure from the layout: the Executor, which carries a Plan out,
// is not in this package but in the cell (Cell.execute over internal/proxy:
// Forward for one dispatch, ForwardDisaggregated for prefill then decode,
// with load tracking, retries, metrics and tracing as hooks). Executing
// needs the HTTP proxy and the cell's state; keeping this package to pure
// decisions is what lets the query-only API, the global tier's probes and
// the decision tests run it without any I/O.
//
// Filters are hard (alive, role) or soft (load thresholds). When every pod
// is filtered, the decision fails open: it ignores the soft filters and
// says so in Decision.FailedOpen, so an overloaded cell degrades to
// load-only routing instead of refusing requests.
//
// # Adding a scorer
//
//  1. Write a type with Type(), Reads(), Writes() and
//     Score(rc *Context, out []float64). out[k] scores candidate
//     rc.Candidates[rc.Active()[k]]; higher is better; keep it in [0, 1]
//     so that profile weights compare. Read slots with Slot.Get.
//  2. Declare in Reads every slot Score reads, so profiles that lack its
//     writer fail at start-up instead of at the first request.
//  3. Add a factory line to plugins.Register; parameters decode with
//     Params.Decode into your struct (unknown fields are errors).
//  4. Name it in a profile: score: [{type: my-scorer, weight: 0.5}].
//  5. Add a table test of its decisions next to the others.
//
// # Explaining a decision
//
// Context.SetExplain asks the next decision to record what it saw
// (Explain): per selector pass, the filter verdicts (with the soft
// filters' kept apart when the pass failed open), each scorer's raw scores
// and weight, the weighted totals and the picker's order. Choose copies
// them from the slices it decides with, as each stage ends, so the record
// is the decision, not a recomputation. Off (the default, and after
// Reset), recording costs Choose a nil test per stage and per scorer.
//
// Metrics and tracing wrap the core through the Observer interface; this
// package imports neither.
package pipeline
