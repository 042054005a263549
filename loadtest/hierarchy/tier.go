package hierarchy

import "github.com/cellrouter/cellrouter/global"

// tierConfig is what the global tier's decision is made of in both models
// (the quality run's hierRouter and the scale run): the search and the
// choice, derived from the run's settings as global.Router derives them
// from its Config.
type tierConfig struct {
	// MaxProbes, Slack and ColdBlocks tune global.SearchDepths; ProbeCold
	// probes a cold prompt's hashed cells (global.SearchConfig.ProbeCold).
	MaxProbes, Slack, ColdBlocks int
	ProbeCold                    bool
	// Prefill is the choice's weight of one block to prefill (the cells'
	// overlap weight) and Move its cost of copying a prefix another probed
	// cell holds (global.ChooseConfig); Pressure its cost of a cached block
	// the pick would evict (the cells' pressure weight).
	Prefill, Move, Pressure float64
	// FullAt is the search's fullness at which a cell counts as full
	// (global.SearchConfig.FullAt).
	FullAt float64
	// AvoidBusy puts busy picks after every other whatever their costs
	// (global.ChooseConfig.AvoidBusy).
	AvoidBusy bool
}

// configs returns the search and the choice. The search's bound weighs a
// block the cell lacks as the choice does (global.ChooseConfig.BlockWeight:
// the prefill and the move), as global.Router's decide sets it, so the
// search never leaves out a cell the choice would prefer.
func (t tierConfig) configs() (global.SearchConfig, global.ChooseConfig) {
	choose := global.ChooseConfig{PrefillWeight: t.Prefill, MoveWeight: t.Move, RTTWeight: global.DefaultChooseConfig().RTTWeight,
		PressureWeight: t.Pressure, AvoidBusy: t.AvoidBusy}
	search := global.SearchConfig{MaxProbes: t.MaxProbes, Slack: t.Slack, ColdBlocks: t.ColdBlocks,
		PrefillWeight: choose.BlockWeight(), ProbeCold: t.ProbeCold, PressureWeight: t.Pressure, FullAt: t.FullAt}
	return search, choose
}
