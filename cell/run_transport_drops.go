package cell

import (
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/grpcpub"
	"github.com/cellrouter/cellrouter/cell/events/natsjs"
	"github.com/cellrouter/cellrouter/cell/events/zmqsub"
)

// dropCounter is implemented by transports that drop messages before the
// applier sees them; Drops returns the counts by reason label.
type dropCounter interface {
	Drops() map[string]uint64
}

// Drops returns the ZMQ transport's drops by reason.
func (t zmqTransport) Drops() map[string]uint64 {
	out := map[string]uint64{}
	ct := t.Counters()
	for i, r := range zmqsub.DecodeReasons {
		out[r] = ct.DecodeErrors[i].Load()
	}
	return out
}

// Drops returns the NATS transport's drops before the applier by reason
// (the applier counts its own).
func (t natsTransport) Drops() map[string]uint64 {
	out := map[string]uint64{}
	ct := t.Counters()
	for _, l := range natsjs.DecodeLabels() {
		out[l] = ct.Dropped(l)
	}
	return out
}

// grpcDrops returns the gRPC Publish transport's drops before the applier:
// its validation reasons, without the applier's own reasons (which it
// relays) and without duplicates (harmless).
func grpcDrops(s *grpcpub.Server) map[string]uint64 {
	applier := map[string]bool{grpcpub.ReasonDuplicate: true}
	for _, r := range events.DropReasons() {
		applier[r.String()] = true
	}
	// The server refuses unknown pods itself, before the applier sees them.
	delete(applier, grpcpub.ReasonUnknownPod)
	out := map[string]uint64{}
	for r, n := range s.Counters().Dropped {
		if !applier[r] {
			out[r] = n
		}
	}
	return out
}

// transportDrops returns every transport's drops before the applier, keyed
// "<transport>/<reason>", zero counts left out.
func (c *Cell) transportDrops(pub *grpcpub.Server) func() map[string]uint64 {
	return func() map[string]uint64 {
		out := map[string]uint64{}
		add := func(name string, m map[string]uint64) {
			for r, n := range m {
				if n > 0 {
					out[name+"/"+r] += n
				}
			}
		}
		for _, t := range c.transports {
			if d, ok := t.(dropCounter); ok {
				add(t.Name(), d.Drops())
			}
		}
		add("grpc", grpcDrops(pub))
		return out
	}
}
