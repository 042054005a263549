package auth

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// naiveMatch is the reference for PodSet.Match: a pod matches when some
// pattern is "*", equals it, or ends in '*' and prefixes it.
func naiveMatch(patterns []string, pod string) bool {
	for _, p := range patterns {
		if p == "*" || p == pod || (strings.HasSuffix(p, "*") && strings.HasPrefix(pod, p[:len(p)-1])) {
			return true
		}
	}
	return false
}

// TestPodSetMatchesReference checks PodSet against naiveMatch on random
// patterns and pods drawn from a small alphabet, so that prefixes and
// exact names collide often.
func TestPodSetMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			b.WriteByte("ab-0"[rng.IntN(4)])
		}
		return b.String()
	}
	for range 2000 {
		var patterns []string
		for range 1 + rng.IntN(4) {
			p := word()
			switch rng.IntN(4) {
			case 0:
				p += "*"
			case 1:
				if rng.IntN(8) == 0 {
					p = "*"
				}
			}
			patterns = append(patterns, p)
		}
		set, err := ParsePods(patterns)
		if err != nil {
			t.Fatalf("ParsePods(%q): %v", patterns, err)
		}
		for range 20 {
			pod := word()
			if got, want := set.Match(pod), naiveMatch(patterns, pod); got != want {
				t.Fatalf("patterns %q, pod %q: got %v, want %v", patterns, pod, got, want)
			}
		}
	}
}

func TestParsePods(t *testing.T) {
	if s, err := ParsePods(nil); s != nil || err != nil || !s.Match("anything") {
		t.Errorf("ParsePods(nil) = %v, %v; want nil (unrestricted)", s, err)
	}
	s, err := ParsePods([]string{"vllm-*", "pod-a", "10.0.0.7:8000"})
	if err != nil {
		t.Fatal(err)
	}
	for pod, want := range map[string]bool{"vllm-0": true, "vllm-": true, "pod-a": true, "pod-ab": false, "10.0.0.7:8000": true, "vll": false, "": false} {
		if got := s.Match(pod); got != want {
			t.Errorf("Match(%q) = %v, want %v", pod, got, want)
		}
	}
	if got := s.String(); got != "10.0.0.7:8000,pod-a,vllm-*" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range [][]string{{""}, {"a*b"}, {"**"}, {"pod a"}, {"pod\x00"}, {"é"}, {strings.Repeat("p", MaxPodPatternLen+1)}} {
		if _, err := ParsePods(bad); err == nil || !strings.Contains(err.Error(), "pods[0]") {
			t.Errorf("ParsePods(%q) = %v, want an error naming pods[0]", bad, err)
		}
	}
	if (&PodSet{}).Match("x") || !(&PodSet{}).Empty() {
		t.Error("an empty PodSet must match nothing")
	}
}

// TestKeyFilePods checks the key file's pods: parsed into the principal,
// refused on a key without the events scope or with a bad pattern.
func TestKeyFilePods(t *testing.T) {
	tab, err := ParseKeyFile([]byte(testKeyFile(map[string]string{
		"pub-a":   "tenant: acme, scopes: [events], pods: [pod-a, 'vllm-*']",
		"pub-any": "tenant: acme, scopes: [events]",
	})))
	if err != nil {
		t.Fatal(err)
	}
	p, err := tab.Authenticate("Bearer pub-a")
	if err != nil {
		t.Fatal(err)
	}
	if !p.MayPublish("pod-a") || !p.MayPublish("vllm-3") || p.MayPublish("pod-b") {
		t.Errorf("pub-a: MayPublish pod-a %v vllm-3 %v pod-b %v, want true true false", p.MayPublish("pod-a"), p.MayPublish("vllm-3"), p.MayPublish("pod-b"))
	}
	p, _ = tab.Authenticate("Bearer pub-any")
	if p.Pods != nil || !p.MayPublish("pod-b") {
		t.Errorf("a key without pods: got %v, want unrestricted (the cell admits only configured pods)", p.Pods)
	}
	for spec, want := range map[string]string{
		"tenant: acme, scopes: [inference], pods: [pod-a]": "keys[0].pods",
		"tenant: acme, scopes: [events], pods: ['a*b']":    "keys[0].pods[0]",
	} {
		if _, err := ParseKeyFile([]byte(testKeyFile(map[string]string{"k": spec}))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error naming %s", spec, err, want)
		}
	}
}
