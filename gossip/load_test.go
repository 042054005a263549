package gossip

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSetLightestAgainstSort: the lightest pods are the first of every
// pod's load sorted, at most LightestPods of them, and the least loaded
// pod's load is the first.
func TestSetLightestAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		pods := make([]int, r.IntN(3*LightestPods))
		for i := range pods {
			pods[i] = r.IntN(20) * 100 // ties are common
			if trial%7 == 0 {
				pods[i] = r.IntN(1 << 30)
			}
		}
		in := slices.Clone(pods)
		var l Load
		l.SetLightest(pods)
		if !slices.Equal(pods, in) {
			t.Fatalf("SetLightest changed its input: %v, was %v", pods, in)
		}
		want := slices.Clone(pods)
		slices.Sort(want)
		want = want[:min(len(want), LightestPods)]
		if got := l.Lightest[:l.NLightest]; !slices.Equal(got, want) {
			t.Fatalf("lightest of %v: got %v, want %v", pods, got, want)
		}
		least := 0
		if len(want) > 0 {
			least = want[0]
		}
		if l.LeastPodBlocks != least {
			t.Fatalf("least of %v: got %d, want %d", pods, l.LeastPodBlocks, least)
		}
	}
}

// TestLightestOnTheWire: a header carries the lightest pods; one whose
// first lightest pod is not the least loaded, or that names more than
// LightestPods, is malformed.
func TestLightestOnTheWire(t *testing.T) {
	h := &Header{Cell: "c", Epoch: 1, Seq: 1, Load: lightestLoad(Load{Pods: 3}, 9, 4, 4)}
	got, err := DecodeHeader(EncodeHeader(h))
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Load; l.NLightest != 3 || l.Lightest != [LightestPods]int{4, 4, 9} || l.LeastPodBlocks != 4 {
		t.Fatalf("decoded load %+v, want lightest 4, 4, 9", l)
	}
	for _, tc := range []struct {
		name string
		l    Load
	}{
		{"first above the least", Load{Pods: 1, LeastPodBlocks: 3, Lightest: [LightestPods]int{5}, NLightest: 1}},
		{"too many", Load{Pods: 9, NLightest: LightestPods + 1}},
	} {
		raw := EncodeHeader(&Header{Cell: "c", Epoch: 1, Seq: 1, Load: tc.l})
		if tc.name == "too many" {
			// The encoder never writes more than LightestPods: forge the count.
			raw = forgeLightestCount(t, raw, LightestPods+1)
		}
		if _, err := DecodeHeader(raw); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", tc.name, err)
		}
	}
}

// forgeLightestCount returns a header whose load claims n lightest pods:
// it finds the count's byte as the first difference between the encodings
// of a header with none and with one.
func forgeLightestCount(t *testing.T, raw []byte, n byte) []byte {
	t.Helper()
	h := &Header{Cell: "c", Epoch: 1, Seq: 1, Load: Load{Pods: 9}}
	base := EncodeHeader(h)
	h.Load.NLightest = 1
	one := EncodeHeader(h)
	for i := range base {
		if base[i] != one[i] {
			out := slices.Clone(base)
			out[i] = n
			return out
		}
	}
	t.Fatal("no lightest-pods count found")
	return raw
}
