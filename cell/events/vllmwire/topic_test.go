package vllmwire

import (
	"errors"
	"strings"
	"testing"
)

func TestParseTopic(t *testing.T) {
	tests := []struct {
		topic      string
		pod, model string
		ok         bool
	}{
		{"kv@pod-1@llama", "pod-1", "llama", true},
		{"kv@10.0.0.7:5557@meta-llama/Llama-3.1-8B", "10.0.0.7:5557", "meta-llama/Llama-3.1-8B", true},
		{"kv@[::1]:5557@org/model@rev2", "[::1]:5557", "org/model@rev2", true},
		{"kv@pod@", "pod", "", true},
		{"kv@pod", "pod", "", true},
		{"kv@@model", "", "", false},
		{"kv@", "", "", false},
		{"", "", "", false},
		{"kv", "", "", false},
		{"KV@pod@m", "", "", false},
		{"metrics@pod@m", "", "", false},
	}
	for _, tt := range tests {
		pod, model, err := ParseTopic(tt.topic)
		if tt.ok {
			if err != nil || pod != tt.pod || model != tt.model {
				t.Errorf("ParseTopic(%q): got %q, %q, %v, want %q, %q, nil", tt.topic, pod, model, err, tt.pod, tt.model)
			}
			if got := Topic(pod, model); got != tt.topic && strings.Count(tt.topic, "@") > 1 {
				t.Errorf("Topic(%q, %q): got %q, want %q", pod, model, got, tt.topic)
			}
			continue
		}
		if !errors.Is(err, ErrBadTopic) || Reason(err) != "topic" {
			t.Errorf("ParseTopic(%q): got err %v (reason %q), want ErrBadTopic", tt.topic, err, Reason(err))
		}
	}
}

func TestSplitTopic(t *testing.T) {
	tests := []struct {
		topic, prefix string
		pod, model    string
		ok            bool
	}{
		{"", "", "", "", false}, // vLLM's default topic names nobody
		{"kv-events", "", "kv-events", "", true},
		{"10.0.0.7:8000@llama", "", "10.0.0.7:8000", "llama", true},
		{"kv-events/pod-3@m", "kv-events/", "pod-3", "m", true},
		{"kv-events/", "kv-events/", "", "", false},
		{"kv-events", "kv-events/", "", "", false},
		{"kv@pod@m", "kv@", "pod", "m", true},
		{"kv@pod", "kv@", "pod", "", true},
		{"@m", "", "", "", false},
	}
	for _, tt := range tests {
		pod, model, ok := SplitTopic(tt.topic, tt.prefix)
		if pod != tt.pod || model != tt.model || ok != tt.ok {
			t.Errorf("SplitTopic(%q, %q): got %q %q %v, want %q %q %v", tt.topic, tt.prefix, pod, model, ok, tt.pod, tt.model, tt.ok)
		}
		bp, bm, bok := SplitTopic([]byte(tt.topic), tt.prefix)
		if string(bp) != pod || string(bm) != model || bok != ok {
			t.Errorf("SplitTopic([]byte(%q), %q) disagrees with the string form", tt.topic, tt.prefix)
		}
	}
}

func TestSeq(t *testing.T) {
	for _, seq := range []uint64{0, 1, 255, 1 << 40, ReplayEndSeq} {
		frame := EncodeSeq(seq)
		if len(frame) != 8 {
			t.Fatalf("EncodeSeq(%d): got %d bytes, want 8", seq, len(frame))
		}
		got, err := ParseSeq(frame)
		if err != nil || got != seq {
			t.Errorf("ParseSeq(EncodeSeq(%d)): got %d, %v, want %d, nil", seq, got, err, seq)
		}
	}
	if got := EncodeSeq(0x0102030405060708); string(got) != "\x01\x02\x03\x04\x05\x06\x07\x08" {
		t.Errorf("EncodeSeq: got %x, want big-endian 0102030405060708", got)
	}
	if got := EncodeSeq(ReplayEndSeq); string(got) != "\xff\xff\xff\xff\xff\xff\xff\xff" {
		t.Errorf("EncodeSeq(ReplayEndSeq): got %x, want all 0xff", got)
	}
	for _, n := range []int{0, 7, 9} {
		if _, err := ParseSeq(make([]byte, n)); Reason(err) != "bad_seq" {
			t.Errorf("ParseSeq(%d bytes): got %v, want bad_seq", n, err)
		}
	}
}
