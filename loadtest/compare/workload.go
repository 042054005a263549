package compare

import (
	"fmt"

	"github.com/cellrouter/cellrouter/loadtest/trace"
	"github.com/cellrouter/cellrouter/loadtest/workload"
)

// The workloads a comparison replays (Config.Workload).
const (
	// WorkloadConversation is the Mooncake trace at Config.TracePath.
	WorkloadConversation = "conversation"
	// WorkloadCold is package loadtest/workload's cold-heavy conversations
	// (no shared prefix, more than half the requests cold, follow-ups
	// within seconds), Config.WorkloadRequests of them from Config.Seed,
	// at about the trace's pace before sampling.
	WorkloadCold = "cold"
)

// records reads the trace or generates the cold workload, before
// sampling.
func records(cfg Config) ([]trace.Record, error) {
	switch cfg.Workload {
	case WorkloadCold:
		n := cfg.WorkloadRequests
		if n <= 0 {
			n = workload.ColdRequests
		}
		return workload.Cold(n, cfg.Seed), nil
	case WorkloadConversation, "":
		return trace.ReadFile(cfg.TracePath, 0)
	}
	return nil, fmt.Errorf("compare: Workload %q, want %s or %s", cfg.Workload, WorkloadConversation, WorkloadCold)
}
