package proxy

import "github.com/prometheus/client_golang/prometheus"

// watchCollector exports a proxy's WatchStats.
type watchCollector struct {
	p                                              *Proxy
	timeouts, stalls, ejections, readmits, ejected *prometheus.Desc
}

// Collector returns a collector of the proxy's WatchStats, its metrics
// named prefix + "_first_byte_timeouts_total", "_stream_stalls_total",
// "_ejections_total", "_readmissions_total" and "_ejected", with labels.
func (p *Proxy) Collector(prefix, target string, labels prometheus.Labels) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prefix+name, help, nil, labels)
	}
	return &watchCollector{p: p,
		timeouts:  d("_first_byte_timeouts_total", "Attempts given up because the "+target+" sent nothing within the first-byte bound and failed its liveness check (retried on the next "+target+")."),
		stalls:    d("_stream_stalls_total", "Streams ended with an SSE error event because the "+target+" stopped sending."),
		ejections: d("_ejections_total", "Ejections of a "+target+" that timed out or failed in a row."),
		readmits:  d("_readmissions_total", "Ejected "+target+"s readmitted because they answered again."),
		ejected:   d("_ejected", "Targets ("+target+"s) ejected now."),
	}
}

// Describe implements prometheus.Collector.
func (c *watchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.timeouts
	ch <- c.stalls
	ch <- c.ejections
	ch <- c.readmits
	ch <- c.ejected
}

// Collect implements prometheus.Collector.
func (c *watchCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.WatchStats()
	ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(s.FirstByteTimeouts))
	ch <- prometheus.MustNewConstMetric(c.stalls, prometheus.CounterValue, float64(s.Stalls))
	ch <- prometheus.MustNewConstMetric(c.ejections, prometheus.CounterValue, float64(s.Ejections))
	ch <- prometheus.MustNewConstMetric(c.readmits, prometheus.CounterValue, float64(s.Readmissions))
	ch <- prometheus.MustNewConstMetric(c.ejected, prometheus.GaugeValue, float64(s.Ejected))
}
