package cell

import (
	"errors"
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
)

// CheckConfig checks cfg as far as celld can without running: Validate,
// then what New only finds out while building the parts (the pod
// registry, the ZMQ transport's endpoints, the chat template, every routing
// profile and the workflow), all without opening a socket, dialling
// anything or sizing the index. It is what `celld --check-config` runs, so
// that a configuration rendered by a deployment tool can be refused before
// it is deployed.
//
// The tokenizer file (routing.tokenizer_json) is not opened: its path
// names a file where celld runs, which need not exist where the check does.
// Errors name the configuration field, as Validate's do.
func CheckConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if _, err := events.NewRegistry(cfg.eventsConfig(), time.Now()); err != nil {
		return fmt.Errorf("%w: pods: %v", ErrConfig, err)
	}
	if err := cfg.checkZMQ(); err != nil {
		return err
	}
	if t := cfg.Routing.ChatTemplate; t != "" {
		if _, err := tokenizer.ChatTemplateByName(t); err != nil {
			return fmt.Errorf("%w: routing.chat_template = %s: %v", ErrConfig, t, err)
		}
	}
	return cfg.checkRouting()
}

// checkZMQ validates the ZMQ transport's configuration as buildZMQ would
// derive it, one pod at a time first so that an error names the pod.
func (c Config) checkZMQ() error {
	for i, p := range c.Pods {
		one := c
		one.ZMQ.Bind, one.Pods = "", []PodConfig{p}
		if zc, ok := one.zmqConfig(); ok {
			if err := zc.Validate(); err != nil {
				return fmt.Errorf("%w: pods[%d] (zmq_endpoint %q, replay_endpoint %q): %v",
					ErrConfig, i, p.ZMQEndpoint, p.ReplayEndpoint, err)
			}
		}
	}
	zc, ok := c.zmqConfig()
	if !ok {
		return nil
	}
	if err := zc.Validate(); err != nil {
		return fmt.Errorf("%w: zmq (bind %q): %v", ErrConfig, c.ZMQ.Bind, err)
	}
	return nil
}

// checkRouting builds the routing profiles and workflow over an empty,
// unsized index, as New does over the real one.
func (c Config) checkRouting() error {
	ic := c.indexConfig()
	ic.ExpectedBlocks = 0
	ix, err := index.New(ic)
	if err != nil {
		return fmt.Errorf("%w: index: %v", ErrConfig, err)
	}
	defer ix.Close()
	reg, err := events.NewRegistry(c.eventsConfig(), time.Now())
	if err != nil {
		return fmt.Errorf("%w: pods: %v", ErrConfig, err)
	}
	remote := c
	remote.Routing.TokenizerJSON, remote.Routing.ChatTemplate = "", ""
	tok, err := newTokenizer(remote, nil, nil)
	if err != nil {
		return err
	}
	if _, err := newRouter(c, ix, reg, nil, nil, tok, nil, nil); err != nil {
		if errors.Is(err, ErrConfig) {
			return err
		}
		return fmt.Errorf("%w: routing.profiles: %v", ErrConfig, err)
	}
	return nil
}
