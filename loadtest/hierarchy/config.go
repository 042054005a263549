package hierarchy

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// DefaultTrace is the trace committed with the repository, relative to the
// module root.
const DefaultTrace = "loadtest/traces/conversation_trace.jsonl"

// Model is the model name every request's chain is seeded with.
const Model = "mooncake-trace"

// Config describes one benchmark run.
type Config struct {
	// TracePath is the Mooncake trace to replay.
	TracePath string `json:"trace"`
	// MaxRequests limits the replay to the first requests; 0 replays all.
	MaxRequests int `json:"max_requests"`
	// Cells and PodsPerCell shape the hierarchical fleet; the flat router
	// sees the same Cells*PodsPerCell pods (at most index.MaxPods) in one index.
	Cells       int `json:"cells"`
	PodsPerCell int `json:"pods_per_cell"`
	// Seed drives every routing decision's randomness (tie-breaks).
	Seed uint64 `json:"seed"`
	// Seeds is how many replays a level pools, with seeds Seed, Seed+1,
	// ...: a different tie-break early on sends the two routers' caches
	// down different paths, which moves one replay's reuse by up to a
	// percent either way, so a single seed cannot tell a 1% loss from
	// noise. The reuse figures pool every seed's blocks; the others are
	// the first seed's (see Report.SeedRuns), and Report.ReuseLossSE is
	// the seeds' standard error. The default, 4, runs in two rounds of
	// two seeds on two cores, as 3 did, with a standard error smaller by
	// sqrt(4/3).
	Seeds int `json:"seeds"`
	// BlockSize is the engine and router block size in tokens; it must
	// divide 512 (one trace hash id).
	BlockSize int `json:"block_size"`
	// BlocksPerPod is each pod's KV cache budget in blocks.
	BlocksPerPod int `json:"blocks_per_pod"`
	// SummaryInterval is how often, in trace seconds, every cell rebuilds
	// and publishes its summary; the global tier sees only the latest.
	SummaryInterval float64 `json:"summary_interval_s"`
	// LoadInterval is how often, in trace seconds, every cell announces
	// its load between summary generations (a header with the load and no
	// new summary, as gossip.Node.SetLoad sends); 0 announces it only with
	// each summary, as celld does.
	LoadInterval float64 `json:"load_interval_s"`
	// MaxProbes, ProbeSlack and ColdBlocks tune global.Search.
	MaxProbes  int `json:"max_probes"`
	ProbeSlack int `json:"probe_slack"`
	ColdBlocks int `json:"cold_blocks"`
	// ProbeCold probes a cold prompt's hashed cells
	// (global.SearchConfig.ProbeCold); false hands it unprobed to the less
	// loaded of two, as before issue 24.
	ProbeCold bool `json:"probe_cold"`
	// MoveWeight is the global choice's cost of copying a prefix another
	// probed cell holds, per block (global.ChooseConfig.MoveWeight).
	MoveWeight float64 `json:"move_weight"`
	// Stride and FalsePositiveRate tune the summaries (gossip.SummaryConfig).
	Stride            int     `json:"stride"`
	FalsePositiveRate float64 `json:"fpr"`
	// OverlapWeight, Temperature and BusyThreshold are the cells' default
	// profile (plugins.DefaultProfile); OverlapWeight is also the global
	// tier's prefill weight in global.Choose.
	OverlapWeight float64 `json:"overlap_weight"`
	Temperature   float64 `json:"temperature"`
	BusyThreshold float64 `json:"busy_threshold"`
	// PressureWeight is the cells' kv-cost pressure_weight (the cost of a
	// cached block a pick would evict, plugins.KVCost) and the global
	// choice's (global.ChooseConfig.PressureWeight).
	PressureWeight float64 `json:"pressure_weight"`
	// FullAt is the global search's estimated fullness at which a cell
	// counts as full (global.SearchConfig.FullAt).
	FullAt float64 `json:"full_at"`
	// AvoidBusy puts a cell whose pick is busy after every cell whose pick
	// is not, whatever the costs (global.ChooseConfig.AvoidBusy).
	AvoidBusy bool `json:"avoid_busy"`
	// DecodeMsPerToken sets the load model: a request occupies its pod for
	// output_length * DecodeMsPerToken of trace time.
	DecodeMsPerToken float64 `json:"decode_ms_per_token"`
	// Loads, when not empty, sweeps the load: one run per value of
	// DecodeMsPerToken, from the trace's own pace to past the point where
	// the favourite cell's pods are busy (see Sweep).
	Loads []float64 `json:"loads,omitempty"`
	// PrefillMsPerBlock is the TTFT estimate's prefill time of one block
	// on an idle pod (see outcomes).
	PrefillMsPerBlock float64 `json:"prefill_ms_per_block"`
	// Workload is WorkloadConversation (the trace at TracePath),
	// WorkloadAgents (generated: see agents.go) or WorkloadCold (generated
	// cold-heavy conversations: see package loadtest/workload).
	Workload string `json:"workload"`
	// Prompt is what requests carry: PromptTokens (token ids, the
	// default), PromptText or PromptChat (text the engines, the global
	// tier and the cells tokenize).
	Prompt string `json:"prompt"`
	// TokenizerJSON and ChatTemplate are the tokenizer of the text modes;
	// "" means the demo tokenizer (tokenizer.DemoJSON) and its template.
	TokenizerJSON string `json:"tokenizer_json"`
	ChatTemplate  string `json:"chat_template"`
	// Progress, if not nil, receives progress lines.
	Progress func(format string, args ...any) `json:"-"`
}

// DefaultConfig returns the settings: the committed trace, 8 cells
// of 32 pods, seeds 42 to 45 pooled, 16-token blocks, 16,384 blocks per pod (the index
// benchmark's budget, small enough that pods evict), summaries every 2 s
// (the cell's default), the global tier's search defaults (2 probes, slack
// 8, cold key over 4 blocks), stride 4, 1% false positives, the cell's
// default profile (overlap weight 1, arg-max, busy above 95%) and 20 ms per
// output token.
func DefaultConfig() Config {
	s := gossip.DefaultSummaryConfig()
	return Config{
		TracePath:         DefaultTrace,
		Cells:             8,
		PodsPerCell:       32,
		Seed:              42,
		Seeds:             4,
		BlockSize:         16,
		BlocksPerPod:      16384,
		SummaryInterval:   2,
		MaxProbes:         2,
		ProbeSlack:        8,
		ColdBlocks:        4,
		ProbeCold:         true,
		MoveWeight:        global.DefaultMoveWeight,
		Stride:            s.Stride,
		FalsePositiveRate: s.FalsePositiveRate,
		OverlapWeight:     1,
		Temperature:       0,
		BusyThreshold:     0.95,
		PressureWeight:    plugins.DefaultPressureWeight,
		FullAt:            global.DefaultFullAt,
		DecodeMsPerToken:  20,
		PrefillMsPerBlock: 0.5,
		Prompt:            PromptTokens,
		Workload:          WorkloadConversation,
	}
}

// DefaultLoads is the sweep of the command's default run, in ms of trace
// time per output token: the trace's own pace (the fleet nearly idle),
// loaded, past the point where the favourite cell's pods are busy, and far
// past it.
var DefaultLoads = []float64{20, 400, 2000, 5000}

// QuickConfig is DefaultConfig cut to the first 2,000 requests (about ten
// minutes of trace), which runs in well under a minute on two cores.
func QuickConfig() Config {
	c := DefaultConfig()
	c.MaxRequests = 2000
	return c
}

// Pods returns the number of pods of either router.
func (c Config) Pods() int { return c.Cells * c.PodsPerCell }

// Validate returns an error naming the first bad field.
func (c Config) Validate() error {
	switch {
	case c.TracePath == "":
		return fmt.Errorf("hierarchy: TracePath is empty")
	case c.Seeds < 1:
		return fmt.Errorf("hierarchy: Seeds must be >= 1, got %d", c.Seeds)
	case c.MaxRequests < 0:
		return fmt.Errorf("hierarchy: MaxRequests must be >= 0, got %d", c.MaxRequests)
	case c.Cells < 1:
		return fmt.Errorf("hierarchy: Cells must be >= 1, got %d", c.Cells)
	case c.PodsPerCell < 1:
		return fmt.Errorf("hierarchy: PodsPerCell must be >= 1, got %d", c.PodsPerCell)
	case c.Cells*c.PodsPerCell > index.MaxPods:
		return fmt.Errorf("hierarchy: Cells*PodsPerCell must be <= %d (one flat index), got %d", index.MaxPods, c.Cells*c.PodsPerCell)
	case c.BlockSize < blockhash.MinBlockSize || c.BlockSize > blockhash.MaxBlockSize || trace.TokensPerID%c.BlockSize != 0:
		return fmt.Errorf("hierarchy: BlockSize must divide %d, got %d", trace.TokensPerID, c.BlockSize)
	case c.BlocksPerPod < 1:
		return fmt.Errorf("hierarchy: BlocksPerPod must be >= 1, got %d", c.BlocksPerPod)
	case !(c.SummaryInterval > 0):
		return fmt.Errorf("hierarchy: SummaryInterval must be > 0 s, got %v", c.SummaryInterval)
	case !(c.LoadInterval >= 0):
		return fmt.Errorf("hierarchy: LoadInterval must be >= 0 s, got %v", c.LoadInterval)
	case c.MaxProbes < 1:
		return fmt.Errorf("hierarchy: MaxProbes must be >= 1, got %d", c.MaxProbes)
	case !(c.FullAt > 0 && c.FullAt <= 1):
		return fmt.Errorf("hierarchy: FullAt must be in (0, 1], got %v", c.FullAt)
	case c.ProbeSlack < 0:
		return fmt.Errorf("hierarchy: ProbeSlack must be >= 0, got %d", c.ProbeSlack)
	case c.ColdBlocks < 1:
		return fmt.Errorf("hierarchy: ColdBlocks must be >= 1, got %d", c.ColdBlocks)
	case !(c.MoveWeight >= 0):
		return fmt.Errorf("hierarchy: MoveWeight must be >= 0, got %v", c.MoveWeight)
	case c.OverlapWeight < 0:
		return fmt.Errorf("hierarchy: OverlapWeight must be >= 0, got %v", c.OverlapWeight)
	case !(c.PressureWeight >= 0):
		return fmt.Errorf("hierarchy: PressureWeight must be >= 0, got %v", c.PressureWeight)
	case c.Temperature < 0:
		return fmt.Errorf("hierarchy: Temperature must be >= 0, got %v", c.Temperature)
	case !(c.BusyThreshold > 0 && c.BusyThreshold <= 1):
		return fmt.Errorf("hierarchy: BusyThreshold must be in (0, 1], got %v", c.BusyThreshold)
	case !(c.DecodeMsPerToken >= 0):
		return fmt.Errorf("hierarchy: DecodeMsPerToken must be >= 0, got %v", c.DecodeMsPerToken)
	case c.Prompt != PromptTokens && c.Prompt != PromptText && c.Prompt != PromptChat:
		return fmt.Errorf("hierarchy: Prompt must be tokens, text or chat, got %q", c.Prompt)
	case !(c.PrefillMsPerBlock >= 0):
		return fmt.Errorf("hierarchy: PrefillMsPerBlock must be >= 0, got %v", c.PrefillMsPerBlock)
	case c.Workload != WorkloadConversation && c.Workload != WorkloadAgents && c.Workload != WorkloadCold:
		return fmt.Errorf("hierarchy: Workload must be %s, %s or %s, got %q", WorkloadConversation, WorkloadAgents, WorkloadCold, c.Workload)
	}
	for _, l := range c.Loads {
		if !(l >= 0) {
			return fmt.Errorf("hierarchy: Loads must be >= 0 ms per token, got %v", l)
		}
	}
	if err := c.summaryConfig().Validate(); err != nil {
		return fmt.Errorf("hierarchy: %w", err)
	}
	return nil
}

// tier is the run's global tier: the cells' overlap weight is the
// choice's prefill weight.
func (c Config) tier() tierConfig {
	return tierConfig{MaxProbes: c.MaxProbes, Slack: c.ProbeSlack, ColdBlocks: c.ColdBlocks, ProbeCold: c.ProbeCold,
		Prefill: c.OverlapWeight, Move: c.MoveWeight, Pressure: c.PressureWeight, FullAt: c.FullAt, AvoidBusy: c.AvoidBusy}
}

// summaryConfig is the gossip default with the run's stride and rate.
func (c Config) summaryConfig() gossip.SummaryConfig {
	s := gossip.DefaultSummaryConfig()
	s.Stride, s.FalsePositiveRate = c.Stride, c.FalsePositiveRate
	return s
}

// progress reports one line if a Progress function is set.
func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		c.Progress(format, args...)
	}
}
