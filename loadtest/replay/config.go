package replay

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Default response headers that name the serving pod, in the order they
// are read: the cell's, then the engine simulator's.
var DefaultPodHeaders = []string{"X-Cellrouter-Pod", "X-Enginesim-Pod"}

// Config says what to replay against and how fast.
type Config struct {
	// Target is the endpoint's base URL (http://host:port); requests go to
	// Target + "/v1/completions".
	Target string
	// Model is the request's model field.
	Model string
	// TimeScale multiplies the trace's arrival offsets (0.1 = ten times
	// denser).
	TimeScale float64
	// Rate multiplies the trace's arrival rate (2 = twice as many requests
	// per second); the offsets are divided by it.
	Rate float64
	// Concurrency caps the requests in flight; 0 means no cap.
	Concurrency int
	// Stream asks for server-sent events.
	Stream bool
	// MaxTokensCap caps max_tokens (the trace's output_length); 0 means no
	// cap.
	MaxTokensCap int
	// Timeout bounds one request from send to the end of its body.
	Timeout time.Duration
	// PodHeaders are the response headers that name the serving pod, the
	// first present one wins; a response with none is served by "unknown".
	PodHeaders []string
}

// DefaultConfig returns a streamed replay at trace speed with at most 256
// requests in flight and a 5-minute timeout.
func DefaultConfig() Config {
	return Config{
		Model:       "mooncake",
		TimeScale:   1,
		Rate:        1,
		Concurrency: 256,
		Stream:      true,
		Timeout:     5 * time.Minute,
		PodHeaders:  DefaultPodHeaders,
	}
}

// Validate names the first bad field and its value.
func (c Config) Validate() error {
	u, err := url.Parse(c.Target)
	switch {
	case c.Target == "":
		return fmt.Errorf("replay: Target is empty, want http://host:port")
	case !strings.Contains(c.Target, "://"):
		return fmt.Errorf("replay: Target %q has no scheme, want http://host:port", c.Target)
	case err != nil:
		return fmt.Errorf("replay: Target %q: %v", c.Target, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("replay: Target %q: scheme must be http or https", c.Target)
	case u.Host == "":
		return fmt.Errorf("replay: Target %q: no host", c.Target)
	case c.Model == "":
		return fmt.Errorf("replay: Model is empty")
	case !(c.TimeScale >= 0) || c.TimeScale > 1e6:
		return fmt.Errorf("replay: TimeScale = %v, want in [0, 1e6]", c.TimeScale)
	case !(c.Rate > 0) || c.Rate > 1e9:
		return fmt.Errorf("replay: Rate = %v, want > 0", c.Rate)
	case c.Concurrency < 0:
		return fmt.Errorf("replay: Concurrency = %d, want >= 0", c.Concurrency)
	case c.MaxTokensCap < 0:
		return fmt.Errorf("replay: MaxTokensCap = %d, want >= 0", c.MaxTokensCap)
	case c.Timeout <= 0:
		return fmt.Errorf("replay: Timeout = %v, want > 0", c.Timeout)
	}
	return nil
}

// endpoint returns the completions URL of the target.
func (c Config) endpoint() string {
	u, _ := url.Parse(c.Target)
	u.Path = trimSlash(u.Path) + "/v1/completions"
	return u.String()
}

// trimSlash drops trailing slashes.
func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}
