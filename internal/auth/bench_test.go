package auth

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkAuthenticate is the cost every authenticated request pays: parse
// the header, hash the key, look it up, among 10,000 keys.
func BenchmarkAuthenticate(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("tenants: [{name: acme}]\nkeys:\n")
	for i := range 10000 {
		fmt.Fprintf(&sb, "  - {sha256: %s, tenant: acme, scopes: [inference]}\n", HashKey(fmt.Sprint("key-", i)))
	}
	tab, err := ParseKeyFile([]byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	h := "Bearer key-4242"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tab.Authenticate(h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLimiter is one admitted request of a limited tenant: Acquire and
// Release.
func BenchmarkLimiter(b *testing.B) {
	ten := &Tenant{Name: "acme", Limits: Limits{RequestsPerSecond: 1e12, Burst: 1 << 30, MaxConcurrent: 1 << 20}}
	l := NewLimiter()
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(1)
		tk, err := l.Acquire(ten, now)
		if err != nil {
			b.Fatal(err)
		}
		l.Release(tk)
	}
}

// BenchmarkPodSetMatch is the check of every Publish request of a key or
// certificate tied to pods: 64 exact ids and 8 prefixes, a pod that
// matches the last prefix.
func BenchmarkPodSetMatch(b *testing.B) {
	var patterns []string
	for i := range 64 {
		patterns = append(patterns, fmt.Sprint("pod-", i))
	}
	for i := range 8 {
		patterns = append(patterns, fmt.Sprintf("rack%d-*", i))
	}
	set, err := ParsePods(patterns)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !set.Match("rack7-vllm-3") {
			b.Fatal("no match")
		}
	}
}
