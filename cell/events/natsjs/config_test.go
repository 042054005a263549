package natsjs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string // "" means valid
	}{
		{"default", func(*Config) {}, ""},
		{"no url", func(c *Config) { c.URL = " " }, "URL"},
		{"stream with dot", func(c *Config) { c.Stream = "a.b" }, "Stream"},
		{"empty stream", func(c *Config) { c.Stream = "" }, "Stream"},
		{"wildcard prefix", func(c *Config) { c.SubjectPrefix = "kv.*" }, "SubjectPrefix"},
		{"empty token prefix", func(c *Config) { c.SubjectPrefix = "kv..events" }, "SubjectPrefix"},
		{"durable with space", func(c *Config) { c.Durable = "cell d" }, "Durable"},
		{"negative max age", func(c *Config) { c.StreamMaxAge = -time.Second }, "StreamMaxAge"},
		{"zero max bytes", func(c *Config) { c.StreamMaxBytes = 0 }, "StreamMaxBytes"},
		{"unbounded max bytes", func(c *Config) { c.StreamMaxBytes = -1 }, ""},
		{"tiny ack wait", func(c *Config) { c.AckWait = time.Microsecond }, "AckWait"},
		{"zero max ack pending", func(c *Config) { c.MaxAckPending = 0 }, "MaxAckPending"},
		{"zero max deliver", func(c *Config) { c.MaxDeliver = 0 }, "MaxDeliver"},
		{"unlimited max deliver", func(c *Config) { c.MaxDeliver = -1 }, ""},
		{"negative nak delay", func(c *Config) { c.NakDelay = -1 }, "NakDelay"},
		{"negative gap retries", func(c *Config) { c.GapRetries = -1 }, "GapRetries"},
		{"negative gap delay", func(c *Config) { c.GapDelay = -1 }, "GapDelay"},
		{"zero pull batch", func(c *Config) { c.PullBatch = 0 }, "PullBatch"},
		{"zero ready poll", func(c *Config) { c.ReadyPoll = 0 }, "ReadyPoll"},
		{"zero retry backoff", func(c *Config) { c.RetryBackoff = 0 }, "RetryBackoff"},
		{"negative log every", func(c *Config) { c.LogEvery = -1 }, "LogEvery"},
		{"bad stream subject", func(c *Config) { c.StreamSubjects = []string{"kv.>.x"} }, "StreamSubjects[0]"},
		{"good stream subjects", func(c *Config) { c.StreamSubjects = []string{"kv.events.>", "other.*"} }, ""},
		{"negative limit", func(c *Config) { c.Limits.MaxEvents = -1 }, "Limits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "Config."+tc.field) || !strings.HasPrefix(err.Error(), "natsjs: ") {
				t.Fatalf("Validate() = %v, want an error naming Config.%s", err, tc.field)
			}
		})
	}
}

func TestNewConsumerRejects(t *testing.T) {
	a, _ := newApplier(t)
	bad := DefaultConfig()
	bad.Durable = ""
	if _, err := NewConsumer(bad, a, nil); err == nil {
		t.Errorf("NewConsumer with a bad config: got nil error, want one")
	}
	if _, err := NewConsumer(DefaultConfig(), nil, nil); err == nil {
		t.Errorf("NewConsumer with a nil sink: got nil error, want one")
	}
}

func TestRateLogBounded(t *testing.T) {
	var buf bytes.Buffer
	r := newRateLog(slog.New(slog.NewTextHandler(&buf, nil)), time.Second)
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	var logged []bool
	for _, step := range []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 0} {
		now = now.Add(step)
		logged = append(logged, r.warn("drop"))
	}
	want := []bool{true, false, false, true, false}
	for i := range want {
		if logged[i] != want[i] {
			t.Fatalf("logged = %v, want %v", logged, want)
		}
	}
	if got := strings.Count(buf.String(), "suppressed=2"); got != 1 {
		t.Errorf("log %q: got %d lines with suppressed=2, want 1", buf.String(), got)
	}
}
