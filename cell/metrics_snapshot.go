package cell

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// How the cell's index state was loaded at start (the outcome label of
// cellrouter_snapshot_load_info).
const (
	loadNone    = "none"    // snapshots off, or no file yet
	loadFile    = "file"    // restored from snapshot.dir
	loadPeer    = "peer"    // restored from a replica (bootstrap_from)
	loadRefused = "refused" // files were refused (corrupt, foreign, other version): empty
	loadFailed  = "failed"  // the directory, the replica or the restore failed: empty
)

// snapMetrics are the figures of the cell's snapshots.
type snapMetrics struct {
	mu          sync.Mutex
	loadOutcome string
	loadTime    time.Duration
	loadBlocks  int
	created     time.Time // of the newest snapshot written or loaded
	writeTime   time.Duration
	writeBytes  int64

	decodeTime time.Duration // set and read in New only

	writes, writeFailed, refused, served atomic.Uint64
}

func newSnapMetrics() *snapMetrics { return &snapMetrics{loadOutcome: loadNone} }

func (m *snapMetrics) setLoad(outcome string, took time.Duration, blocks int) {
	m.mu.Lock()
	m.loadOutcome, m.loadTime, m.loadBlocks = outcome, took, blocks
	m.mu.Unlock()
}

func (m *snapMetrics) setCreated(t time.Time) {
	m.mu.Lock()
	m.created = t
	m.mu.Unlock()
}

func (m *snapMetrics) wrote(at time.Time, took time.Duration, bytes int64) {
	m.writes.Add(1)
	m.mu.Lock()
	m.created, m.writeTime, m.writeBytes = at, took, bytes
	m.mu.Unlock()
}

// collect exports the figures (one of the collector's extra exporters).
func (m *snapMetrics) collect(cellID string) func(chan<- prometheus.Metric) {
	labels := prometheus.Labels{"cell": cellID}
	d := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc("cellrouter_snapshot_"+name, help, vars, labels)
	}
	loadInfo := d("load_info", "How the index state was loaded at start: 1 for the outcome (none, file, peer, refused, failed).", "outcome")
	loadSecs := d("load_seconds", "Time to read, check and restore the snapshot loaded at start.")
	loadBlocks := d("loaded_blocks", "Blocks restored from the snapshot loaded at start.")
	age := d("age_seconds", "Age of the newest snapshot written or loaded.")
	writeSecs := d("write_seconds", "Time the last snapshot write took.")
	bytes := d("bytes", "Size of the last snapshot written.")
	writes := d("writes_total", "Snapshot writes, by outcome.", "outcome")
	refused := d("refused_total", "Snapshots refused at start (corrupt, foreign, other version, failed bootstrap).")
	served := d("streams_total", "Snapshots streamed to replicas (CellService.StreamSnapshot).")
	return func(ch chan<- prometheus.Metric) {
		m.mu.Lock()
		outcome, lt, lb, created, wt, wb := m.loadOutcome, m.loadTime, m.loadBlocks, m.created, m.writeTime, m.writeBytes
		m.mu.Unlock()
		g := func(desc *prometheus.Desc, v float64, lv ...string) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, lv...)
		}
		c := func(desc *prometheus.Desc, v uint64, lv ...string) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), lv...)
		}
		g(loadInfo, 1, outcome)
		g(loadSecs, lt.Seconds())
		g(loadBlocks, float64(lb))
		if !created.IsZero() {
			g(age, time.Since(created).Seconds())
		}
		g(writeSecs, wt.Seconds())
		g(bytes, float64(wb))
		c(writes, m.writes.Load(), "ok")
		c(writes, m.writeFailed.Load(), "failed")
		c(refused, m.refused.Load())
		c(served, m.served.Load())
	}
}
