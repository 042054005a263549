package hierarchy

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// The workloads of a run (Config.Workload).
const (
	// WorkloadConversation replays the trace at Config.TracePath.
	WorkloadConversation = "conversation"
	// WorkloadAgents generates agent sessions (AgentsTrace).
	WorkloadAgents = "agents"
	// WorkloadCold generates cold-heavy conversations (workload.Cold): no
	// shared prefix, more than half the requests cold.
	WorkloadCold = "cold"
)

// AgentsRequests is the length of the agents workload when
// Config.MaxRequests is 0, about the committed trace's.
const AgentsRequests = 12000

// AgentsTrace generates n requests of agent sessions, a prefix workload
// shaped unlike the conversation trace (which shares one 512-token system
// prompt among all requests, with turns a minute or more apart):
//
//   - 24 agent types, each with its own long system prompt (tool schemas
//     and instructions) of 6 to 16 hash ids (3k to 8k tokens), chosen with
//     Zipf popularity (exponent 1.1), so one or two prompts are hot;
//   - sessions start as a Poisson process (0.6 per second); each is a loop
//     of 3 to 12 tool calls: turn k's prompt is the system prompt, the
//     session's task (one id) and the k previous steps (one id each, the
//     call and its result), so every turn extends the last by one id;
//   - turns follow each other after the call's output and a tool run of
//     0.5 to 4 s: much faster than the summaries' 2 s refresh can follow;
//   - outputs are short tool calls (40 to 160 tokens), the last turn an
//     answer (200 to 600 tokens).
//
// It is deterministic for a seed. Hash ids of system prompts, tasks and
// steps never collide with each other.
func AgentsTrace(n int, seed uint64) []trace.Record {
	const (
		types       = 24
		sessionRate = 0.6 // per second
		sysBase     = uint64(1) << 40
		idBase      = uint64(1) << 41
	)
	r := rand.New(rand.NewPCG(seed, 0xa9e47))
	sysLen := make([]int, types)
	for i := range sysLen {
		sysLen[i] = 6 + r.IntN(11)
	}
	// Zipf weights, cumulative.
	cum := make([]float64, types)
	var total float64
	for i := range cum {
		total += 1 / math.Pow(float64(i+1), 1.1)
		cum[i] = total
	}
	pickType := func() int {
		x := r.Float64() * total
		i, _ := slices.BinarySearch(cum, x)
		return min(i, types-1)
	}
	next := idBase
	newID := func() uint64 { next++; return next }
	var out []trace.Record
	t := 0.0 // seconds
	for len(out) < n+n/4 {
		t += r.ExpFloat64() / sessionRate
		typ := pickType()
		ids := make([]uint64, 0, 32)
		for j := range sysLen[typ] {
			ids = append(ids, sysBase+uint64(typ)*64+uint64(j))
		}
		ids = append(ids, newID())
		turns := 3 + r.IntN(10)
		at := t
		for k := range turns {
			outLen := 40 + r.IntN(121)
			if k == turns-1 {
				outLen = 200 + r.IntN(401)
			}
			out = append(out, trace.Record{Timestamp: int64(at * 1000), InputLength: len(ids) * trace.TokensPerID,
				OutputLength: outLen, HashIDs: slices.Clone(ids)})
			// The next turn: this call's output (at 20 ms a token) and
			// the tool's run later, one step longer.
			at += float64(outLen)*0.02 + 0.5 + 3.5*r.Float64()
			ids = append(ids, newID())
		}
	}
	slices.SortStableFunc(out, func(a, b trace.Record) int {
		switch {
		case a.Timestamp < b.Timestamp:
			return -1
		case a.Timestamp > b.Timestamp:
			return 1
		}
		return 0
	})
	return out[:n]
}
