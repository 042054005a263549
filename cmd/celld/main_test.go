package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestRunRejectsBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--config", "does-not-exist.yaml"}, "does-not-exist.yaml"},
		{[]string{"--http-addr", "nonsense"}, "http_addr"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--busy-threshold", "1.5"}, "busy_threshold"},
		{[]string{"--router-temperature", "-1"}, "router_temperature"},
		{[]string{"--kv-overlap-score-weight", "-2"}, "kv_overlap_score_weight"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.want)
		}
	}
}
