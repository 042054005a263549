package cell

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/cell/events/natsjs"
)

// buildTransports creates the event transports the configuration asks for.
// The gRPC Publish transport is always on: it is a service of the gRPC
// server and needs no connection of its own.
func (c *Cell) buildTransports() error {
	if c.cfg.NATS.URL != "" {
		nc, err := natsjs.NewConsumer(c.cfg.natsConfig(), c.applier, c.log.With("transport", "nats"))
		if err != nil {
			return err
		}
		if err := nc.ResumeAfter(c.resumeStream); err != nil {
			return err
		}
		c.streamPos = nc.Position
		c.transports = append(c.transports, natsTransport{nc})
		c.metrics = append(c.metrics, natsMetrics(c.cfg.CellID, nc.Counters()))
	}
	return c.buildZMQ()
}

type natsTransport struct{ *natsjs.Consumer }

func (natsTransport) Name() string                    { return "nats" }
func (t natsTransport) Run(ctx context.Context) error { return t.Consumer.Run(ctx) }
func (t natsTransport) Ready() <-chan struct{}        { return t.Consumer.Ready() }

// natsMetrics exports the NATS consumer's counters.
func natsMetrics(cellID string, ct *natsjs.Counters) func(chan<- prometheus.Metric) {
	labels := prometheus.Labels{"cell": cellID, "transport": "nats"}
	desc := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc("cellrouter_transport_"+name, help, vars, labels)
	}
	msgs := desc("messages_total", "Messages a transport received.")
	applied := desc("batches_total", "Batches a transport handed to the applier.")
	dropped := desc("dropped_total", "Messages a transport dropped, by reason.", "reason")
	acks := desc("nats_acks_total", "JetStream acknowledgements sent, by kind.", "kind")
	redeliveries := desc("nats_redeliveries_total", "JetStream messages received more than once.")
	gaps := desc("gap_give_ups_total", "Sequence gaps a transport could not repair.")
	return func(ch chan<- prometheus.Metric) {
		c := func(d *prometheus.Desc, v uint64, lv ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
		}
		c(msgs, ct.Messages.Load())
		c(applied, ct.Applied.Load())
		c(redeliveries, ct.Redeliveries.Load())
		c(acks, ct.Acks.Load(), "ack")
		c(acks, ct.Naks.Load(), "nak")
		c(acks, ct.Terms.Load(), "term")
		c(gaps, ct.GapGiveUps.Load())
		for _, l := range natsjs.DropLabels() {
			c(dropped, ct.Dropped(l), l)
		}
	}
}
