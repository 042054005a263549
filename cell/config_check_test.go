package cell

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckConfigFindsWhatValidateMisses checks that CheckConfig refuses,
// naming the field, configurations that Validate accepts but New (celld's
// start) would refuse, and accepts the documented example.
func TestCheckConfigFindsWhatValidateMisses(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // "" accepts
	}{
		{"example", "", ""},
		{"zmq endpoint without scheme", "pods: [{id: a, address: 10.0.0.1:8000, zmq_endpoint: 10.0.0.1:5557}]", "pods[0]"},
		{"replay endpoint without scheme", "pods: [{id: a, address: 10.0.0.1:8000, zmq_endpoint: tcp://10.0.0.1:5557}, {id: b, address: 10.0.0.2:8000, zmq_endpoint: tcp://10.0.0.2:5557, replay_endpoint: 10.0.0.2:5558}]", "pods[1]"},
		{"zmq bind without scheme", "zmq: {bind: 0.0.0.0:5557}", "zmq (bind"},
		{"unknown chat template", "routing: {tokenizer_json: /models/tokenizer.json, chat_template: nope}", "routing.chat_template"},
		{"missing profile", "routing: {profile: fast}", `"fast"`},
		{"unknown plug-in", "routing: {profile: p, profiles: [{name: p, score: [{type: no-such-scorer, weight: 1}], pick: max-score}]}", "no-such-scorer"},
		{"prefill profile missing", "routing: {prefill_profile: pre, decode_profile: default}", `"pre"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			var err error
			if tt.yaml == "" {
				cfg, err = LoadConfig("testdata/celld.example.yaml")
			} else {
				cfg, err = ParseConfig([]byte(tt.yaml))
			}
			if err != nil {
				t.Fatalf("Validate refused it already (the case must pass Validate): %v", err)
			}
			err = CheckConfig(cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckConfig got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("CheckConfig got %v, want an error naming %s", err, tt.want)
			case tt.want != "" && !errors.Is(err, ErrConfig):
				t.Errorf("CheckConfig got %v, want it to wrap ErrConfig", err)
			}
		})
	}
}

// TestCheckConfigRunsValidate checks that CheckConfig includes Validate.
func TestCheckConfigRunsValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CellID = ""
	if err := CheckConfig(cfg); err == nil || !strings.Contains(err.Error(), "cell_id") {
		t.Errorf("CheckConfig(empty cell_id) got %v, want an error naming cell_id", err)
	}
}
