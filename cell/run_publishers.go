package cell

import (
	"context"
	"errors"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/grpcpub"
	"github.com/cellrouter/cellrouter/internal/edge"
)

// Who may publish events for which pod over gRPC.
//
// The guard admits a Publish stream with the events scope (an API key, or
// the certificate of a publisher); the pods that key or certificate names
// (auth.Principal.Pods) then bound what the stream may publish: a request
// naming another pod ends the stream with PermissionDenied. A request
// naming a pod the cell does not know is rejected before any state is
// kept for it, unless events.accept_unknown_pods, so no publisher can make
// the cell create pods.

// errNoPrincipal refuses a stream the guard did not admit (it always
// does; this keeps a wiring mistake from opening publishing to anyone).
var errNoPrincipal = errors.New("no authenticated principal")

// errPodNotNamed refuses a pod the key or certificate does not name.
var errPodNotNamed = errors.New("the key or certificate does not name this pod")

// publisherConfig is the gRPC Publish server's configuration: the default
// limits, the applier's pod admission, and the principal's pods.
func (c *Cell) publisherConfig() grpcpub.Config {
	cfg := grpcpub.DefaultConfig()
	cfg.Admits = c.applier.Admits
	cfg.Authorize = authorizePublish(c.applier)
	cfg.Logger = c.log.With("transport", "grpc")
	return cfg
}

// authorizePublish returns the check of a Publish request's pod against
// the pods its principal may publish for: the name it sends, or the
// configured pod that name stands for (an engine named by address).
func authorizePublish(a *events.Applier) func(ctx context.Context, pod string) error {
	return func(ctx context.Context, pod string) error {
		p, ok := edge.PrincipalFrom(ctx)
		if !ok {
			return errNoPrincipal
		}
		if p.MayPublish(pod) {
			return nil
		}
		if id, _ := a.PodID(pod); id != pod && p.MayPublish(id) {
			return nil
		}
		return errPodNotNamed
	}
}
