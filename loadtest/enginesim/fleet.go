package enginesim

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// MaxFleetPods is the largest fleet StartFleet starts (a cell's pod limit).
const MaxFleetPods = 256

// FleetConfig configures a fleet of pods in one process.
type FleetConfig struct {
	// Pods is the number of pods, 1..MaxFleetPods. Default 4.
	Pods int
	// Pod is every pod's configuration. Its ID must be "" (each pod is
	// named by its HTTP address) or a prefix (pod i is named
	// "<ID>-<i>"). With BasePort 0 its addresses must use port 0, since
	// pods cannot share a port. Default DefaultConfig().
	Pod Config
	// Roles, when not empty, gives pod i the role Roles[i] (len(Roles) must
	// be Pods); empty leaves every pod at Pod.Role.
	Roles []Role
	// BasePort, when not 0, places pod i on fixed ports of the HTTPAddr
	// host: HTTP on BasePort+3i, the PUB socket on BasePort+3i+1 and the
	// replay socket on BasePort+3i+2, for configurations written by hand.
	// Default 0: free ports.
	BasePort int
}

// DefaultFleetConfig returns 4 pods of DefaultConfig on free loopback ports.
func DefaultFleetConfig() FleetConfig {
	return FleetConfig{Pods: 4, Pod: DefaultConfig()}
}

// Validate returns an error naming the first invalid field and its value.
func (c FleetConfig) Validate() error {
	switch {
	case c.Pods < 1 || c.Pods > MaxFleetPods:
		return fmt.Errorf("enginesim: FleetConfig.Pods %d out of range [1, %d]", c.Pods, MaxFleetPods)
	case len(c.Roles) != 0 && len(c.Roles) != c.Pods:
		return fmt.Errorf("enginesim: FleetConfig.Roles has %d entries, want 0 or Pods (%d)", len(c.Roles), c.Pods)
	case c.BasePort < 0 || c.BasePort+3*c.Pods > 65536:
		return fmt.Errorf("enginesim: FleetConfig.BasePort %d leaves no room for %d pods below 65536", c.BasePort, c.Pods)
	}
	for i, r := range c.Roles {
		if r != RoleBoth && r != RolePrefill && r != RoleDecode {
			return fmt.Errorf("enginesim: FleetConfig.Roles[%d] %q, want both, prefill or decode", i, r)
		}
	}
	if c.BasePort != 0 {
		if _, _, err := net.SplitHostPort(c.Pod.HTTPAddr); err != nil {
			return fmt.Errorf("enginesim: FleetConfig.Pod.HTTPAddr %q: %v", c.Pod.HTTPAddr, err)
		}
	}
	if err := c.Pod.Validate(); err != nil {
		return err
	}
	return nil
}

// podConfig returns the configuration of pod i.
func (c FleetConfig) podConfig(i int) Config {
	pc := c.Pod
	if pc.ID != "" {
		pc.ID = pc.ID + "-" + strconv.Itoa(i)
	}
	if len(c.Roles) > 0 {
		pc.Role = c.Roles[i]
	}
	if c.BasePort != 0 {
		host, _, _ := net.SplitHostPort(pc.HTTPAddr)
		port := c.BasePort + 3*i
		pc.HTTPAddr = net.JoinHostPort(host, strconv.Itoa(port))
		pc.Events.Endpoint = "tcp://" + net.JoinHostPort(host, strconv.Itoa(port+1))
		if pc.Events.ReplayEndpoint != "" {
			pc.Events.ReplayEndpoint = "tcp://" + net.JoinHostPort(host, strconv.Itoa(port+2))
		}
	}
	return pc
}

// Fleet is a set of pods running in one process, each on its own ports.
type Fleet struct {
	pods []*Pod
}

// StartFleet starts cfg.Pods pods. On error it closes the pods it started.
func StartFleet(cfg FleetConfig) (*Fleet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &Fleet{}
	for i := range cfg.Pods {
		p, err := NewPod(cfg.podConfig(i))
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("enginesim: start pod %d: %w", i, err)
		}
		f.pods = append(f.pods, p)
	}
	return f, nil
}

// Pods returns the pods in start order. The slice must not be modified.
func (f *Fleet) Pods() []*Pod { return f.pods }

// Pod returns pod i.
func (f *Fleet) Pod(i int) *Pod { return f.pods[i] }

// Close closes every pod concurrently and waits for all of them.
func (f *Fleet) Close() error {
	errs := make([]error, len(f.pods))
	var wg sync.WaitGroup
	for i, p := range f.pods {
		wg.Go(func() { errs[i] = p.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
