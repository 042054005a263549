package cell

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/cell/events/zmqsub"
)

// zmqConfig maps the cell's configuration onto the ZMQ transport's, and
// reports whether the transport is needed at all (a bind address, or a pod
// with a ZMQ endpoint).
func (c Config) zmqConfig() (zmqsub.Config, bool) {
	z := zmqsub.DefaultConfig()
	z.Bind = c.ZMQ.Bind
	if c.ZMQ.TopicPrefix != "" {
		z.Topic = c.ZMQ.TopicPrefix
	}
	z.ReplayTimeout = c.ZMQ.ReplayTimeout
	z.ReplayEndpoints = map[string]string{}
	for _, p := range c.Pods {
		switch {
		case p.ZMQEndpoint != "":
			z.Endpoints = append(z.Endpoints, zmqsub.Endpoint{Pub: p.ZMQEndpoint, Replay: p.ReplayEndpoint, Pod: p.ID, Model: c.Events.DefaultModel})
		case p.ReplayEndpoint != "":
			z.ReplayEndpoints[p.ID] = p.ReplayEndpoint
		}
	}
	return z, z.Bind != "" || len(z.Endpoints) > 0
}

// buildZMQ creates the vLLM/SGLang ZMQ transport when the configuration
// asks for it.
func (c *Cell) buildZMQ() error {
	zc, ok := c.cfg.zmqConfig()
	if !ok {
		return nil
	}
	zc.Logger = c.log.With("transport", "zmq")
	sub, err := zmqsub.New(zc, c.applier)
	if err != nil {
		return err
	}
	c.transports = append(c.transports, zmqTransport{sub})
	c.metrics = append(c.metrics, zmqMetrics(c.cfg.CellID, sub.Counters()))
	return nil
}

type zmqTransport struct{ *zmqsub.Subscriber }

func (zmqTransport) Name() string                    { return "zmq" }
func (t zmqTransport) Run(ctx context.Context) error { return t.Subscriber.Run(ctx) }
func (t zmqTransport) Ready() <-chan struct{}        { return t.Subscriber.Ready() }

// zmqMetrics exports the ZMQ subscriber's counters.
func zmqMetrics(cellID string, ct *zmqsub.Counters) func(chan<- prometheus.Metric) {
	labels := prometheus.Labels{"cell": cellID, "transport": "zmq"}
	desc := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc("cellrouter_transport_"+name, help, vars, labels)
	}
	msgs := desc("messages_total", "Messages a transport received.")
	dropped := desc("dropped_total", "Messages a transport dropped, by reason.", "reason")
	replays := desc("replays_total", "Replays of missed batches, by outcome.", "outcome")
	replayed := desc("batches_replayed_total", "Batches received through replays.")
	gaps := desc("gap_give_ups_total", "Sequence gaps a transport could not repair.")
	restarts := desc("publisher_restarts_total", "Publisher restarts a transport saw.")
	conns := desc("zmq_connections_total", "ZMQ connection events, by kind.", "kind")
	return func(ch chan<- prometheus.Metric) {
		c := func(d *prometheus.Desc, v uint64, lv ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
		}
		c(msgs, ct.Messages.Load())
		for i, r := range zmqsub.DecodeReasons {
			c(dropped, ct.DecodeErrors[i].Load(), r)
		}
		c(replays, ct.ReplaysRequested.Load(), "requested")
		c(replays, ct.ReplaysSucceeded.Load(), "succeeded")
		c(replays, ct.ReplaysFailed.Load(), "failed")
		c(replayed, ct.BatchesReplayed.Load())
		c(gaps, ct.GiveUps.Load())
		c(restarts, ct.Restarts.Load())
		c(conns, ct.Connects.Load(), "connect")
		c(conns, ct.DialFailures.Load(), "dial_failure")
		c(conns, ct.Disconnects.Load(), "disconnect")
	}
}
