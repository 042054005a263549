package proxy

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate(): got %v, want nil", err)
	}
	tests := []struct {
		field  string
		mutate func(c *Config)
	}{
		{"ConnectTimeout", func(c *Config) { c.ConnectTimeout = 0 }},
		{"ResponseHeaderTimeout", func(c *Config) { c.ResponseHeaderTimeout = -1 }},
		{"RequestTimeout", func(c *Config) { c.RequestTimeout = -1 }},
		{"IdleConnTimeout", func(c *Config) { c.IdleConnTimeout = -1 }},
		{"MaxIdleConnsPerHost", func(c *Config) { c.MaxIdleConnsPerHost = -1 }},
		{"MaxAttempts", func(c *Config) { c.MaxAttempts = 0 }},
		{"MaxPrefillResponseBytes", func(c *Config) { c.MaxPrefillResponseBytes = 0 }},
		{"BufferSize", func(c *Config) { c.BufferSize = 10 }},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "Config."+tt.field) || !strings.HasPrefix(err.Error(), "proxy: ") {
			t.Errorf("Validate with bad %s: got %v, want an error naming it", tt.field, err)
		}
		if _, err := New(c); err == nil {
			t.Errorf("New with bad %s: got nil error, want one", tt.field)
		}
	}
}

func TestStatusOf(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 200}, {ErrNoTarget, 503}, {ErrUpstream, 502}, {ErrTimeout, 504},
		{ErrCanceled, 499}, {ErrBadRequest, 400}, {ErrMidStream, 200}, {ErrPrefillRejected, 400},
	}
	for _, tt := range tests {
		if got := StatusOf(tt.err); got != tt.want {
			t.Errorf("StatusOf(%v): got %d, want %d", tt.err, got, tt.want)
		}
	}
}
