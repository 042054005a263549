package replay

import (
	"errors"
	"strings"
	"testing"
)

func TestReadEvents(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr error
	}{
		{"two events", "data: a\n\ndata: b\n\ndata: [DONE]\n\n", []string{"a", "b"}, nil},
		{"crlf and comments", ": ping\r\ndata: a\r\n\r\ndata: [DONE]\r\n\r\n", []string{"a"}, nil},
		{"multi-line data", "data: a\ndata: b\n\ndata: [DONE]\n\n", []string{"a\nb"}, nil},
		{"no space", "data:a\n\ndata:[DONE]\n\n", []string{"a"}, nil},
		{"other fields", "event: x\nid: 3\ndata: a\n\ndata: [DONE]\n\n", []string{"a"}, nil},
		{"done without blank line", "data: a\n\ndata: [DONE]", []string{"a"}, nil},
		{"no done", "data: a\n\ndata: b\n\n", []string{"a", "b"}, errNoDone},
		{"truncated event", "data: a\n\ndata: b", []string{"a", "b"}, errNoDone},
		{"empty", "", nil, errNoDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := readEvents(strings.NewReader(tt.in), func(d []byte) error {
				got = append(got, string(d))
				return nil
			})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("got error %v, want %v", err, tt.wantErr)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got events %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecodeChunk(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantText bool
		wantErr  bool
		cached   int
	}{
		{"completion text", `{"choices":[{"text":"hi"}]}`, true, false, 0},
		{"chat delta", `{"choices":[{"delta":{"content":"hi"}}]}`, true, false, 0},
		{"role only", `{"choices":[{"delta":{"role":"assistant"}}]}`, false, false, 0},
		{"usage", `{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":4}}}`, false, false, 4},
		{"error", `{"error":{"message":"boom","type":"x"}}`, false, true, 0},
		{"not json", `{`, false, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := decodeChunk([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if c.hasText() != tt.wantText || c.Usage.Cached() != tt.cached {
				t.Errorf("got text %v cached %d, want %v %d", c.hasText(), c.Usage.Cached(), tt.wantText, tt.cached)
			}
		})
	}
}

// FuzzReadEvents holds the SSE reader to its contract on any body: no
// panic, and the events it passes on are the data lines of the input.
func FuzzReadEvents(f *testing.F) {
	for _, s := range []string{"data: a\n\ndata: [DONE]\n\n", "data:x\r\n\r\n", ": c\n\n", "data: [DONE]", "\n\n\n", "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		total := 0
		err := readEvents(strings.NewReader(string(in)), func(d []byte) error {
			total += len(d)
			if _, err := decodeChunk(d); err != nil {
				return nil // a bad chunk is the caller's to reject
			}
			return nil
		})
		if total > len(in) {
			t.Errorf("got %d bytes of data from %d bytes of input", total, len(in))
		}
		if err == nil && !strings.Contains(string(in), "[DONE]") {
			t.Errorf("got success without [DONE] in %q", in)
		}
	})
}

func TestProgressLine(t *testing.T) {
	got := progressLine(15, 2, 3, 30, 4.5, 0)
	for _, want := range []string{"15/30 done", "2 errors", "3 in flight", "4.5 req/s", "[###############---------------]"} {
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want it to contain %q", got, want)
		}
	}
}
