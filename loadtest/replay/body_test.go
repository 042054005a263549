package replay

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

func TestAppendBodyParses(t *testing.T) {
	tests := []struct {
		name       string
		rec        trace.Record
		cap        int
		stream     bool
		wantTokens int
		wantMax    int
	}{
		{"one partial block", trace.Record{InputLength: 100, OutputLength: 20, HashIDs: []uint64{0}}, 0, true, 100, 20},
		{"three blocks capped", trace.Record{InputLength: 1100, OutputLength: 900, HashIDs: []uint64{0, 7, 9}}, 64, false, 1100, 64},
		{"cap above output", trace.Record{InputLength: 512, OutputLength: 5, HashIDs: []uint64{3}}, 64, true, 512, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks := PromptTokens(nil, tt.rec)
			body := AppendBody(nil, toks, "m\"odel", MaxTokens(tt.rec, tt.cap), tt.stream)
			req, err := openai.ParseCompletion(body)
			if err != nil {
				t.Fatalf("ParseCompletion: %v\n%s", err, body[:min(len(body), 200)])
			}
			if got := len(req.Prompt.Tokens); got != tt.wantTokens {
				t.Errorf("got %d prompt tokens, want %d", got, tt.wantTokens)
			}
			if req.MaxTokens != tt.wantMax || req.Stream != tt.stream || req.IncludeUsage != tt.stream || req.Model != "m\"odel" {
				t.Errorf("got max_tokens %d stream %v usage %v model %q, want %d %v %v", req.MaxTokens, req.Stream, req.IncludeUsage, req.Model, tt.wantMax, tt.stream, tt.stream)
			}
		})
	}
}

func TestPromptTokensSharePrefixes(t *testing.T) {
	a := PromptTokens(nil, trace.Record{InputLength: 1024, HashIDs: []uint64{0, 1}})
	b := PromptTokens(nil, trace.Record{InputLength: 1024, HashIDs: []uint64{0, 2}})
	if !slices.Equal(a[:512], b[:512]) {
		t.Errorf("got different first blocks for the same hash id, want equal")
	}
	if slices.Equal(a[512:], b[512:]) {
		t.Errorf("got equal second blocks for different hash ids, want different")
	}
}

func TestSchedule(t *testing.T) {
	recs := []trace.Record{{Timestamp: 500}, {Timestamp: 1500}, {Timestamp: 1200}, {Timestamp: 3500}}
	tests := []struct {
		name        string
		scale, rate float64
		want        []time.Duration
	}{
		{"trace speed", 1, 1, []time.Duration{0, time.Second, time.Second, 3 * time.Second}},
		{"time scale", 0.1, 1, []time.Duration{0, 100 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond}},
		{"rate", 1, 2, []time.Duration{0, 500 * time.Millisecond, 500 * time.Millisecond, 1500 * time.Millisecond}},
		{"all at once", 0, 1, []time.Duration{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Schedule(recs, tt.scale, tt.rate); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Target = "http://127.0.0.1:8080"
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"valid", func(*Config) {}, ""},
		{"no target", func(c *Config) { c.Target = "" }, "Target is empty"},
		{"no scheme", func(c *Config) { c.Target = "127.0.0.1:8080" }, "scheme"},
		{"ftp", func(c *Config) { c.Target = "ftp://h:1" }, "scheme must be http or https"},
		{"no host", func(c *Config) { c.Target = "http://" }, "no host"},
		{"rate", func(c *Config) { c.Rate = 0 }, "Rate = 0"},
		{"time scale", func(c *Config) { c.TimeScale = -1 }, "TimeScale = -1"},
		{"concurrency", func(c *Config) { c.Concurrency = -2 }, "Concurrency = -2"},
		{"cap", func(c *Config) { c.MaxTokensCap = -1 }, "MaxTokensCap = -1"},
		{"timeout", func(c *Config) { c.Timeout = 0 }, "Timeout = 0s"},
		{"model", func(c *Config) { c.Model = "" }, "Model is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	for _, tt := range []struct{ target, want string }{
		{"http://h:1", "http://h:1/v1/completions"},
		{"http://h:1/", "http://h:1/v1/completions"},
		{"https://h/prefix/", "https://h/prefix/v1/completions"},
	} {
		if got := (Config{Target: tt.target}).endpoint(); got != tt.want {
			t.Errorf("endpoint(%q) got %q, want %q", tt.target, got, tt.want)
		}
	}
}

func BenchmarkAppendBody8k(b *testing.B) {
	r := trace.Record{InputLength: 8192, OutputLength: 300, HashIDs: make([]uint64, 16)}
	for i := range r.HashIDs {
		r.HashIDs[i] = uint64(i)
	}
	var toks []uint32
	var body []byte
	b.ReportAllocs()
	for b.Loop() {
		toks = PromptTokens(toks[:0], r)
		body = AppendBody(body[:0], toks, "mooncake", 300, true)
	}
	b.SetBytes(int64(len(body)))
}
