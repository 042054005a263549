package enginesim

import (
	"context"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/cell/events/zmqsub"
	"github.com/cellrouter/cellrouter/cell/index"
)

// TestCacheSalt checks that cache_salt partitions the pod's prefix cache as
// vLLM's does (a salt hits only its own blocks), and that the events carry
// the salt so that a cell's applier indexes each block under the salted
// identity a request of that salt is hashed with, in both payload forms.
func TestCacheSalt(t *testing.T) {
	for _, form := range []vllmwire.Form{vllmwire.FormArray, vllmwire.FormMap} {
		cfg := testConfig()
		cfg.Events = DefaultConfig().Events
		cfg.Events.Form = form
		p := startPod(t, cfg)
		ix, err := index.New(index.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ix.Close)
		a, err := events.NewApplier(events.DefaultConfig(), ix, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		zc := zmqsub.DefaultConfig()
		zc.Logger = quiet
		zc.Endpoints = []zmqsub.Endpoint{{Pub: p.ZMQEndpoint(), Replay: p.ReplayEndpoint(), Pod: p.ID(), Model: p.Model()}}
		sub, err := zmqsub.New(zc, a)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = sub.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		<-sub.Ready()
		waitFor(t, func() string { return "no subscriber" }, p.EventsSubscribed)

		prompt := tokens(7, 100) // 6 full blocks
		cached := func(salt string) int {
			body := map[string]any{"prompt": prompt, "max_tokens": 1}
			if salt != "" {
				body["cache_salt"] = salt
			}
			return decodeCompletion(t, post(t, p, openai.PathCompletions, body)).Usage.PromptTokensDetails.CachedTokens
		}
		steps := []struct {
			salt string
			want int
		}{{"tenant:a", 0}, {"tenant:a", 96}, {"tenant:b", 0}, {"", 0}, {"tenant:b", 96}, {"", 96}}
		for i, s := range steps {
			if got := cached(s.salt); got != s.want {
				t.Fatalf("%v: send %d (salt %q): got cached_tokens %d, want %d", form, i, s.salt, got, s.want)
			}
		}
		// The index holds the pod's cache, each chain under its salt.
		want := p.CachedBlocks()
		slices.Sort(want)
		var got []index.BlockHash
		waitFor(t, func() string { return "the index does not hold the pod's cache" }, func() bool {
			got = holdings(ix, p.ID())
			return slices.Equal(got, want)
		})
		h := blockhash.Hasher{BlockSize: cfg.BlockSize}
		for _, salt := range []string{"tenant:a", "tenant:b", ""} {
			chain := h.Chain(blockhash.Seed(blockhash.Identity(p.Model(), "", salt)), prompt, nil)
			for _, b := range chain {
				if _, ok := slices.BinarySearch(got, index.BlockHash(b)); !ok {
					t.Fatalf("%v: salt %q: block %x of the request's chain is not indexed", form, salt, b)
				}
			}
		}
	}
}
