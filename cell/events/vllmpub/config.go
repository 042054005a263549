package vllmpub

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

// DefaultBufferSize is the replay buffer of a vLLM engine, in batches.
const DefaultBufferSize = 10000

// Config configures a Publisher.
type Config struct {
	// Endpoint is the PUB socket's ZMQ address, for example
	// "tcp://127.0.0.1:0" (any free port; see Publisher.Endpoint) or
	// "tcp://*:5557" (vLLM's default). It is bound unless Connect is set.
	Endpoint string
	// Connect makes the PUB socket dial Endpoint instead of binding it, for
	// cells that bind and let engines connect to them.
	Connect bool
	// ReplayEndpoint is where the ROUTER replay socket binds ("" means no
	// replay socket), for example "tcp://127.0.0.1:0" or "tcp://*:5558".
	ReplayEndpoint string
	// Pod and Model make the topic kv@<Pod>@<Model> every batch is sent on.
	// Pod must not be empty or contain '@'; Model may be empty.
	Pod, Model string
	// Topic, when not nil, is sent instead of kv@<Pod>@<Model>, as engines
	// configured otherwise do: vLLM's default topic is the empty string, and
	// deployments pick their own ("kv-events").
	Topic *string
	// Form selects the payload layout (array or map form, optional rank and
	// trailing nils); see vllmwire.Form. Default vllmwire.FormArray.
	Form vllmwire.Form
	// BufferSize is how many of the most recent batches the replay socket
	// can serve. Default DefaultBufferSize.
	BufferSize int
	// Skip, when not nil, is asked about every sequence number; a batch it
	// returns true for is numbered and buffered for replay but never sent,
	// as if the network lost it. It is called with the publisher's lock held
	// and must not call the Publisher.
	Skip func(seq uint64) bool
	// DialTimeout bounds how long a Connect-mode publisher keeps trying to
	// reach its subscriber at start. Default 10s.
	DialTimeout time.Duration
	// Logger receives the sockets' diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns a configuration for pod and model that binds both
// sockets on free loopback ports, in array form, with vLLM's buffer size.
func DefaultConfig(pod, model string) Config {
	return Config{
		Endpoint:       "tcp://127.0.0.1:0",
		ReplayEndpoint: "tcp://127.0.0.1:0",
		Pod:            pod,
		Model:          model,
		Form:           vllmwire.FormArray,
		BufferSize:     DefaultBufferSize,
		DialTimeout:    10 * time.Second,
	}
}

// Validate returns an error naming the first invalid field and its value.
func (c Config) Validate() error {
	if !strings.Contains(c.Endpoint, "://") {
		return fmt.Errorf("vllmpub: Config.Endpoint %q is not a ZMQ address (tcp://host:port)", c.Endpoint)
	}
	if c.ReplayEndpoint != "" && !strings.Contains(c.ReplayEndpoint, "://") {
		return fmt.Errorf("vllmpub: Config.ReplayEndpoint %q is not a ZMQ address (tcp://host:port)", c.ReplayEndpoint)
	}
	if c.Pod == "" || strings.Contains(c.Pod, "@") {
		return fmt.Errorf("vllmpub: Config.Pod %q must be non-empty and free of '@'", c.Pod)
	}
	if c.Form&^(vllmwire.FormMap|vllmwire.FormOmitRank|vllmwire.FormTrimNils) != 0 {
		return fmt.Errorf("vllmpub: Config.Form %#x has unknown bits", uint8(c.Form))
	}
	if c.BufferSize < 1 {
		return fmt.Errorf("vllmpub: Config.BufferSize %d must be at least 1", c.BufferSize)
	}
	if c.Connect && c.DialTimeout <= 0 {
		return fmt.Errorf("vllmpub: Config.DialTimeout %v must be positive in Connect mode", c.DialTimeout)
	}
	return nil
}
