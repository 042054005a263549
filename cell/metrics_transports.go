package cell

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/cell/events/grpcpub"
)

// grpcpubMetrics exports the gRPC Publish transport's counters.
func grpcpubMetrics(cellID string, s *grpcpub.Server) func(chan<- prometheus.Metric) {
	labels := prometheus.Labels{"cell": cellID, "transport": "grpc"}
	applied := prometheus.NewDesc("cellrouter_transport_batches_total", "Batches a transport handed to the applier.", nil, labels)
	dropped := prometheus.NewDesc("cellrouter_transport_dropped_total", "Messages a transport dropped, by reason.", []string{"reason"}, labels)
	restarts := prometheus.NewDesc("cellrouter_transport_publisher_restarts_total", "Publisher restarts a transport saw.", nil, labels)
	return func(ch chan<- prometheus.Metric) {
		ct := s.Counters()
		ch <- prometheus.MustNewConstMetric(applied, prometheus.CounterValue, float64(ct.AppliedBatches))
		ch <- prometheus.MustNewConstMetric(restarts, prometheus.CounterValue, float64(ct.Restarts))
		reasons := make([]string, 0, len(ct.Dropped))
		for r := range ct.Dropped {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			ch <- prometheus.MustNewConstMetric(dropped, prometheus.CounterValue, float64(ct.Dropped[r]), r)
		}
	}
}
