// Package fairness measures a cell's flow control (cell/flowcontrol) the
// way issue 26 states its targets: several tenants replay the Mooncake
// trace through one real cell in front of simulated pods
// (loadtest/enginesim) whose running batch saturates, with flow control on
// and off.
//
// The fleet's capacity is estimated from the replayed records (the running
// slots over the mean modelled time of a request: its prompt's prefill, no
// cache counted, plus its decode); a tenant's share is its weight's part
// of it. Six phases, each on a fresh fleet and cell:
//
//   - solo: the quiet tenant alone, at QuietLoad of its share;
//   - mixed: the quiet tenant as in solo and the noisy one at NoisyFactor
//     times its share, flow control on;
//   - mixed_no_headroom: the same with flow control's headroom at 0 (a
//     work-conserving queue: the noisy tenant may fill every slot), to
//     show what the headroom buys the quiet tenant and costs the noisy
//     one (skipped when Config.Headroom is 0);
//   - mixed_off: the same, flow control off (every request goes to its pod
//     at once, today's behaviour before flow control);
//   - shares: two tenants of different weights, both far over capacity;
//     their served tokens (prompt plus output, as the flow controller
//     counts them) are compared with their weights over the middle of the
//     phase, when both are backlogged;
//   - priority: a critical and a sheddable tenant, both over capacity with
//     a short queue deadline, so requests are shed.
//
// The top-level figures: quiet_p99_ratio is the quiet tenant's TTFT p99 in
// mixed over solo (target at most 1.25; quiet_p50_ratio beside it is
// steadier, the p99 of a few dozen requests moving with the machine's
// load); share_error_max the largest
// relative gap between a tenant's served-token share and its weight's in
// shares (target 0.10); critical_shed_while_sheddable_queued counts the
// critical requests refused while a sheddable request was outstanding
// (sent, no first token and no answer yet: a superset of queued, so the
// count can only overstate; target 0); reuse_loss_vs_off is the relative
// loss of prefix reuse (cached over prompt tokens) of mixed against
// mixed_off over the requests both served (target at most 0.02).
//
// Arrivals are open loop at each tenant's rate (evenly spaced); each
// tenant replays its own slice of the trace's records in order, with its
// own cache salt (tenants are isolated), the prompt capped at
// MaxInputTokens and the output at MaxOutputTokens so a phase stays short.
// Every request streams; its TTFT is the time to the first chunk, and its
// usage (stream_options.include_usage) gives the prompt and cached tokens.
package fairness
