package auth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParsePriority(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Priority
		ok   bool
	}{
		{"critical", PriorityCritical, true},
		{" Standard ", PriorityStandard, true},
		{"SHEDDABLE", PrioritySheddable, true},
		{"", PriorityStandard, false},
		{"high", PriorityStandard, false},
		{"critical2", PriorityStandard, false},
	} {
		got, err := ParsePriority(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePriority(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrPriority) {
			t.Errorf("ParsePriority(%q): error %v does not wrap ErrPriority", tc.in, err)
		}
	}
	for i, p := range Priorities() {
		if p.Index() != i || !p.Valid() {
			t.Errorf("band %v: index %d, valid %v; want %d, true", p, p.Index(), p.Valid(), i)
		}
		if back, err := ParsePriority(p.String()); err != nil || back != p {
			t.Errorf("band %v does not round-trip: %v, %v", p, back, err)
		}
		if i > 0 && !(Priorities()[i-1] < p) {
			t.Errorf("band %v is not above %v", p, Priorities()[i-1])
		}
	}
	if Priority(0) != PriorityStandard {
		t.Errorf("the zero Priority is %v, want standard", Priority(0))
	}
}

func TestRequestPriority(t *testing.T) {
	crit := &Tenant{Name: "c", Priority: PriorityCritical}
	std := &Tenant{Name: "s"}
	shed := &Tenant{Name: "b", Priority: PrioritySheddable}
	tests := []struct {
		name   string
		p      Principal
		header string
		want   Priority
		err    bool
	}{
		{"critical tenant, no header", Principal{Tenant: crit, KeyID: "k"}, "", PriorityCritical, false},
		{"critical tenant lowers", Principal{Tenant: crit, KeyID: "k"}, "sheddable", PrioritySheddable, false},
		{"standard tenant cannot raise", Principal{Tenant: std, KeyID: "k"}, "critical", PriorityStandard, false},
		{"sheddable tenant cannot raise", Principal{Tenant: shed, KeyID: "k"}, "standard", PrioritySheddable, false},
		{"standard tenant lowers", Principal{Tenant: std, KeyID: "k"}, "Sheddable", PrioritySheddable, false},
		{"bad header", Principal{Tenant: crit, KeyID: "k"}, "urgent", PriorityCritical, true},
		{"peer is trusted for the header", Principal{Tenant: std, Peer: true}, "critical", PriorityCritical, false},
		{"peer without header takes the tenant's", Principal{Tenant: shed, Peer: true}, "", PrioritySheddable, false},
		{"no tenant, no header", Principal{}, "", PriorityStandard, false},
		{"no tenant takes the header", Principal{}, "critical", PriorityCritical, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.p.RequestPriority(tc.header)
			if got != tc.want || (err != nil) != tc.err {
				t.Fatalf("got %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
			if err != nil && (!errors.Is(err, ErrPriority) || !strings.Contains(err.Error(), PriorityHeader)) {
				t.Fatalf("error %v: want ErrPriority naming the header", err)
			}
		})
	}
}

func TestKeyFileFlowControl(t *testing.T) {
	tab, err := ParseKeyFile([]byte("tenants:\n" +
		"  - {name: gold, priority: critical, weight: 3, max_queue_wait: 1500ms}\n" +
		"  - {name: batch, priority: sheddable, weight: 0.5}\n" +
		"  - {name: plain}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		band   Priority
		weight float64
		wait   time.Duration
	}{
		{"gold", PriorityCritical, 3, 1500 * time.Millisecond},
		{"batch", PrioritySheddable, 0.5, 0},
		{"plain", PriorityStandard, 1, 0},
	} {
		ten := tab.Tenant(tc.name)
		if ten.Priority != tc.band || ten.Weight != tc.weight || ten.FairWeight() != tc.weight || ten.MaxQueueWait != tc.wait {
			t.Errorf("%s: got band %v weight %v wait %v; want %v %v %v", tc.name, ten.Priority, ten.Weight, ten.MaxQueueWait, tc.band, tc.weight, tc.wait)
		}
	}
	if w := (*Tenant)(nil).FairWeight(); w != 1 {
		t.Errorf("nil tenant's weight: got %v, want 1", w)
	}
	for _, tc := range []struct{ file, want string }{
		{"tenants:\n  - {name: a, priority: urgent}\n", "tenants[0].priority = \"urgent\""},
		{"tenants:\n  - {name: a, weight: 0}\n", "tenants[0].weight = 0"},
		{"tenants:\n  - {name: a, weight: -1}\n", "tenants[0].weight = -1"},
		{"tenants:\n  - {name: a, weight: .nan}\n", "tenants[0].weight = NaN"},
		{"tenants:\n  - {name: a, weight: 1e7}\n", "tenants[0].weight"},
		{"tenants:\n  - {name: a, max_queue_wait: -1s}\n", "tenants[0].max_queue_wait = -1s"},
		{"tenants:\n  - {name: a, max_queue_wait: soon}\n", "bad key file"},
	} {
		_, err := ParseKeyFile([]byte(tc.file))
		if !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error naming %q", tc.file, err, tc.want)
		}
	}
}

// FuzzRequestPriority checks that no header panics the parser, that a
// key's request never rises above its tenant's band, that a valid header
// at or below the band is taken as sent, and that a refusal wraps
// ErrPriority and keeps the tenant's band.
func FuzzRequestPriority(f *testing.F) {
	for _, s := range []string{"", "critical", "standard", "sheddable", " Critical\t", "urgent", "\x00", strings.Repeat("x", 300)} {
		for band := int8(-1); band <= 1; band++ {
			f.Add(s, band, false)
		}
	}
	f.Add("critical", int8(0), true)
	f.Fuzz(func(t *testing.T, header string, band int8, peer bool) {
		ten := &Tenant{Name: "t", Priority: Priority(band % 2)}
		p := Principal{Tenant: ten, KeyID: "k", Peer: peer}
		got, err := p.RequestPriority(header)
		if !got.Valid() {
			t.Fatalf("RequestPriority(%q) = %v: not a band", header, got)
		}
		asked, perr := ParsePriority(header)
		switch {
		case header == "":
			if err != nil || got != ten.Priority {
				t.Fatalf("no header: got %v, %v; want the tenant's %v", got, err, ten.Priority)
			}
		case perr != nil:
			if !errors.Is(err, ErrPriority) || got != ten.Priority {
				t.Fatalf("header %q: got %v, %v; want ErrPriority and the tenant's band", header, got, err)
			}
		case !peer && got != min(asked, ten.Priority):
			t.Fatalf("key, band %v, header %q: got %v, want %v", ten.Priority, header, got, min(asked, ten.Priority))
		case peer && got != asked:
			t.Fatalf("peer, header %q: got %v, want %v", header, got, asked)
		}
		if !peer && got > ten.Priority {
			t.Fatalf("a key raised its band: %v over %v", got, ten.Priority)
		}
	})
}
