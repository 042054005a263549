package bodyflood

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
)

// TestChatBody checks that the flood's body is a chat the routers parse,
// of about the size asked for.
func TestChatBody(t *testing.T) {
	for _, size := range []int{200, 1 << 20} {
		b := chatBody(size)
		if len(b) > size || len(b) < size-16 {
			t.Errorf("chatBody(%d): %d bytes", size, len(b))
		}
		req, err := openai.ParseChat(b)
		if err != nil || len(req.Messages) != 1 || !strings.HasPrefix(req.Messages[0].Content, "the cache") {
			t.Fatalf("chatBody(%d) does not parse as a chat: %v", size, err)
		}
		if !json.Valid(b) {
			t.Fatalf("chatBody(%d) is not JSON", size)
		}
	}
}

// TestProcStatus reads this process's resident memory as Run reads
// globald's (Linux's /proc).
func TestProcStatus(t *testing.T) {
	rss, err := procStatus(os.Getpid(), "VmRSS")
	if err != nil || rss <= 0 {
		t.Fatalf("VmRSS: %d, %v", rss, err)
	}
	hwm, err := procStatus(os.Getpid(), "VmHWM")
	if err != nil || hwm < rss {
		t.Fatalf("VmHWM %d (%v) below VmRSS %d", hwm, err, rss)
	}
	if _, err := procStatus(os.Getpid(), "NoSuchField"); err == nil {
		t.Fatal("a missing field: got no error")
	}
}

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Globald = "/bin/globald"
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults with a binary: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"Globald":     func(c *Config) { c.Globald = "" },
		"Concurrency": func(c *Config) { c.Concurrency = 0 },
		"BodyBytes":   func(c *Config) { c.BodyBytes = 10 },
		"Timeout":     func(c *Config) { c.Timeout = 0 },
	} {
		c := ok
		mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("bad %s: got %v, want an error naming it", name, err)
		}
	}
}
