package auth

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxKeyFileBytes bounds a key file: a million keys fit in well under it.
const MaxKeyFileBytes = 64 << 20

// MaxTenants bounds the tenants of one key file, which are metric labels.
const MaxTenants = 10000

// KeyFile is the key file's YAML document (see the package comment).
type KeyFile struct {
	// Tenants declares every tenant a key may name.
	Tenants []TenantSpec `yaml:"tenants"`
	// Keys are the API keys, one entry per key.
	Keys []KeySpec `yaml:"keys"`
}

// TenantSpec is one tenant of the key file.
type TenantSpec struct {
	// Name names the tenant in metrics, logs and its cache salt: 1 to 64
	// letters, digits, '.', '_' or '-', starting with a letter or digit.
	Name string `yaml:"name"`
	// Isolated partitions the tenant's prefix cache from every other
	// tenant's (the package comment says how); nil means true. Tenants
	// that share prompts on purpose set false.
	Isolated *bool `yaml:"isolated"`
	// RequestsPerSecond is the tenant's sustained request rate, all its
	// keys together, at the daemon that checks its keys; 0 is unlimited.
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	// Burst is how many requests may come at once after a quiet spell; 0
	// means RequestsPerSecond rounded up (at least 1).
	Burst int `yaml:"burst"`
	// MaxConcurrent bounds the tenant's requests in flight; 0 is
	// unlimited; absent (nil) takes the daemon's default
	// (--tenant-max-concurrent, limits.tenant_max_concurrent).
	MaxConcurrent *int `yaml:"max_concurrent"`
	// Priority is the band of the tenant's requests at a cell's flow
	// control: sheddable, standard or critical; "" is standard. A request
	// may lower its own band (PriorityHeader), never raise it.
	Priority string `yaml:"priority"`
	// Weight is the tenant's fair-share weight within its band: under
	// saturation a cell serves tenants tokens in proportion to their
	// weights. Absent is 1; it must be over 0 and at most MaxWeight.
	Weight *float64 `yaml:"weight"`
	// MaxQueueWait bounds how long the tenant's requests wait in a cell's
	// flow-control queue ("2s"); 0 or absent takes the cell's default
	// (flow_control.default_deadline). A shorter bound wins.
	MaxQueueWait time.Duration `yaml:"max_queue_wait"`
}

// MaxWeight bounds a tenant's fair-share weight.
const MaxWeight = 1e6

// KeySpec is one API key of the key file.
type KeySpec struct {
	// SHA256 is the SHA-256 of the key in hex (HashKey(key).String()); the
	// key itself is never written down.
	SHA256 string `yaml:"sha256"`
	// Tenant is the tenant the key belongs to; it must be declared.
	Tenant string `yaml:"tenant"`
	// Scopes are what the key may do: inference, admin, events, route,
	// replica.
	Scopes []string `yaml:"scopes"`
	// Pods, for a key with the events scope, are the pods it may publish
	// events for: pod ids, or prefixes ending in '*' ("vllm-*"); "*" is
	// any pod. Empty: any pod the cell knows (the cell refuses events of
	// pods it does not know unless events.accept_unknown_pods).
	Pods []string `yaml:"pods"`
	// Name is an optional label for people (who holds the key); it is not
	// used for anything else.
	Name string `yaml:"name"`
}

var tenantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ParseKeyFile parses and checks a key file. Unknown fields are errors (a
// misspelt limit must not silently mean "unlimited"), and every error
// wraps ErrKeyFile and names the entry and field at fault.
func ParseKeyFile(data []byte) (*Table, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrKeyFile, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxKeyFileBytes {
		return nil, bad("%d bytes is over the limit of %d", len(data), MaxKeyFileBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		// Most likely a file caught while it is rewritten; a key file that
		// means "no keys" says so (keys: []).
		return nil, bad("empty")
	}
	var kf KeyFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&kf); err != nil && !errors.Is(err, io.EOF) {
		return nil, bad("%v", err)
	}
	if len(kf.Tenants) > MaxTenants {
		return nil, bad("%d tenants is over the limit of %d", len(kf.Tenants), MaxTenants)
	}
	t := &Table{keys: make(map[KeyHash]keyEntry, len(kf.Keys)), tenants: make(map[string]*Tenant, len(kf.Tenants))}
	for i, ts := range kf.Tenants {
		switch {
		case !tenantName.MatchString(ts.Name):
			return nil, bad("tenants[%d].name = %q: want 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", i, ts.Name)
		case t.tenants[ts.Name] != nil:
			return nil, bad("tenants[%d].name = %q: declared twice", i, ts.Name)
		case ts.RequestsPerSecond < 0 || math.IsNaN(ts.RequestsPerSecond) || math.IsInf(ts.RequestsPerSecond, 0):
			return nil, bad("tenants[%d].requests_per_second = %v: want a number >= 0", i, ts.RequestsPerSecond)
		case ts.Burst < 0:
			return nil, bad("tenants[%d].burst = %d: want >= 0", i, ts.Burst)
		case ts.MaxConcurrent != nil && *ts.MaxConcurrent < 0:
			return nil, bad("tenants[%d].max_concurrent = %d: want >= 0", i, *ts.MaxConcurrent)
		case ts.Weight != nil && !(*ts.Weight > 0 && *ts.Weight <= MaxWeight):
			return nil, bad("tenants[%d].weight = %v: want a number over 0 and at most %g", i, *ts.Weight, float64(MaxWeight))
		case ts.MaxQueueWait < 0:
			return nil, bad("tenants[%d].max_queue_wait = %v: want >= 0", i, ts.MaxQueueWait)
		}
		band := PriorityStandard
		if ts.Priority != "" {
			var err error
			if band, err = ParsePriority(ts.Priority); err != nil {
				return nil, bad("tenants[%d].priority = %q: want sheddable, standard or critical", i, ts.Priority)
			}
		}
		weight := 1.0
		if ts.Weight != nil {
			weight = *ts.Weight
		}
		conc := 0 // the limiter's default
		if ts.MaxConcurrent != nil {
			conc = *ts.MaxConcurrent
			if conc == 0 {
				conc = -1 // unlimited, said so
			}
		}
		ten := &Tenant{Name: ts.Name, Isolated: ts.Isolated == nil || *ts.Isolated,
			Limits:   Limits{RequestsPerSecond: ts.RequestsPerSecond, Burst: ts.Burst, MaxConcurrent: conc},
			Priority: band, Weight: weight, MaxQueueWait: ts.MaxQueueWait}
		if ten.Limits.Burst == 0 && ten.Limits.RequestsPerSecond > 0 {
			ten.Limits.Burst = int(max(1, math.Ceil(min(ten.Limits.RequestsPerSecond, math.MaxInt32))))
		}
		t.tenants[ts.Name] = ten
		t.order = append(t.order, ten)
	}
	for i, ks := range kf.Keys {
		raw, err := hex.DecodeString(ks.SHA256)
		if err != nil || len(raw) != len(KeyHash{}) {
			return nil, bad("keys[%d].sha256: want 64 hex digits (the SHA-256 of the key)", i)
		}
		h := KeyHash(raw)
		if _, dup := t.keys[h]; dup {
			return nil, bad("keys[%d].sha256: the same key is listed twice", i)
		}
		ten := t.tenants[ks.Tenant]
		if ten == nil {
			return nil, bad("keys[%d].tenant = %q: not declared under tenants", i, ks.Tenant)
		}
		if len(ks.Scopes) == 0 {
			return nil, bad("keys[%d].scopes: empty (want inference, admin, events, route or replica)", i)
		}
		var s Scope
		for j, name := range ks.Scopes {
			sc, err := ParseScope(name)
			if err != nil {
				return nil, bad("keys[%d].scopes[%d] = %q: want inference, admin, events, route or replica", i, j, name)
			}
			s |= sc
		}
		if len(ks.Pods) > 0 && !s.Has(ScopeEvents) {
			return nil, bad("keys[%d].pods: only a key with the events scope publishes for pods", i)
		}
		pods, err := ParsePods(ks.Pods)
		if err != nil {
			return nil, bad("keys[%d].%v", i, err)
		}
		t.keys[h] = keyEntry{tenant: ten, scopes: s, id: h.ID(), pods: pods}
	}
	return t, nil
}

// ValidTenantName reports whether name is a tenant name a key file may
// declare.
func ValidTenantName(name string) bool { return tenantName.MatchString(name) }
