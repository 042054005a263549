package cell

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/cell/events/zmqsub"
)

// zmqConfig maps the cell's configuration onto the ZMQ transport's, and
// reports whether the transport is needed at all (a bind address, or a pod
// with a ZMQ endpoint).
//
// A pod with zmq_endpoint is dialed as that pod, whatever topic its engine
// publishes on, with its configured model (only: a default model would
// hide the topic's); one of data_parallel_size N is dialed N times, rank r
// on the ports plus r. A pod with only a replay_endpoint connects to bind;
// its replay socket is known by its id and by its address, since engines
// often name themselves by address in their topics.
func (c Config) zmqConfig() (zmqsub.Config, bool) {
	z := zmqsub.DefaultConfig()
	z.Bind = c.ZMQ.Bind
	z.TopicPrefix = c.ZMQ.TopicPrefix
	z.QueueDepth = c.ZMQ.QueueDepth
	z.ReplayTimeout = c.ZMQ.ReplayTimeout
	z.AllowedSources, _ = parseSources(c.ZMQ.AllowedSources) // Validate checked them
	z.ReplayEndpoints = map[string]string{}
	for _, p := range c.Pods {
		switch {
		case p.ZMQEndpoint != "":
			ranks := max(1, p.DataParallelSize)
			for r := 0; r < ranks; r++ {
				ep := zmqsub.Endpoint{Pub: zmqsub.OffsetPort(p.ZMQEndpoint, r), Pod: p.ID, Model: p.Model}
				if p.ReplayEndpoint != "" {
					ep.Replay = zmqsub.OffsetPort(p.ReplayEndpoint, r)
				}
				if ranks > 1 {
					ep.Rank, ep.HasRank = r, true
				}
				z.Endpoints = append(z.Endpoints, ep)
			}
		case p.ReplayEndpoint != "":
			z.ReplayEndpoints[p.ID] = p.ReplayEndpoint
			if p.Address != "" {
				z.ReplayEndpoints[p.Address] = p.ReplayEndpoint
			}
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
	// Topics naming pods the applier would refuse are dropped before the
	// transport keeps any state for them.
	zc.KnownPod = c.applier.Admits
	sub, err := zmqsub.New(zc, c.applier)
	if err != nil {
		return err
	}
	c.transports = append(c.transports, zmqTransport{sub})
	c.metrics = append(c.metrics, zmqMetrics(c.cfg.CellID, sub.Counters()))
	return nil
}

// parseSources parses zmq.allowed_sources: CIDRs, or single addresses
// (a /32 or /128). The error names the entry at fault.
func parseSources(in []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, s := range in {
		s = strings.TrimSpace(s)
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("[%d] = %q: want a CIDR (10.0.0.0/16) or an IP address", i, in[i])
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// ZMQBindEndpoint returns the address engines connect to when zmq.bind is
// set, with its real port ("tcp://127.0.0.1:41234"), or "" without one or
// before Run bound it.
func (c *Cell) ZMQBindEndpoint() string {
	for _, t := range c.transports {
		if z, ok := t.(zmqTransport); ok {
			return z.BindEndpoint()
		}
	}
	return ""
}

type zmqTransport struct{ *zmqsub.Subscriber }

func (zmqTransport) Name() string                    { return "zmq" }
func (t zmqTransport) Run(ctx context.Context) error { return t.Subscriber.Run(ctx) }
func (t zmqTransport) Ready() <-chan struct{}        { return t.Subscriber.Ready() }

// zmqMetrics exports the ZMQ subscriber's counters.
func zmqMetrics(cellID string, ct *zmqsub.Counters) func(chan<- prometheus.Metric) {
	return zmqMetricsOf(cellID, "zmq", ct)
}

// zmqMetricsOf exports ZMQ counters under a transport label of its own.
func zmqMetricsOf(cellID, transport string, ct *zmqsub.Counters) func(chan<- prometheus.Metric) {
	labels := prometheus.Labels{"cell": cellID, "transport": transport}
	desc := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc("cellrouter_transport_"+name, help, vars, labels)
	}
	msgs := desc("messages_total", "Messages a transport received.")
	dropped := desc("dropped_total", "Messages a transport dropped, by reason.", "reason")
	replays := desc("replays_total", "Replays of missed batches, by outcome.", "outcome")
	replayed := desc("batches_replayed_total", "Batches received through replays.")
	gaps := desc("gap_give_ups_total", "Sequence gaps a transport could not repair.")
	restarts := desc("publisher_restarts_total", "Publisher restarts a transport saw.")
	modelChanges := desc("zmq_model_changes_total", "Publishers whose buffer was replayed again under the model their live topic named.")
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
		c(modelChanges, ct.ModelChanges.Load())
		c(conns, ct.Connects.Load(), "connect")
		c(conns, ct.DialFailures.Load(), "dial_failure")
		c(conns, ct.Disconnects.Load(), "disconnect")
		c(conns, ct.RefusedConnections.Load(), "refused")
	}
}
