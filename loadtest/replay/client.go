package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// sender sends one request and measures it. It is safe for concurrent use.
type sender struct {
	client *http.Client
	url    string
	cfg    Config
	// since returns the time elapsed since the start of the replay.
	since func() time.Duration
}

// newTransport returns an HTTP transport sized for conc requests in flight
// (0 = unbounded) with compression off, so that chunks arrive as sent.
func newTransport(conc int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableCompression = true
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = max(conc, 64)
	t.ResponseHeaderTimeout = 0
	return t
}

// do sends body and fills res (whose Index, Scheduled, Sent and Delayed the
// caller has set). parent is the replay's context.
func (s *sender) do(parent context.Context, body []byte, promptLen int, res *Result) {
	res.Pod = UnknownPod
	res.PromptTokens = promptLen
	ctx, cancel := context.WithTimeout(parent, s.cfg.Timeout)
	defer cancel()
	start := s.since()
	res.Sent = start
	fail := func(kind ErrorKind, detail string) {
		res.Err, res.Detail = kind, detail
		res.E2E = s.since() - start
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		fail(ErrConnect, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if s.cfg.Stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		fail(classify(parent, err, false), err.Error())
		return
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.Pod = podOf(resp.Header, s.cfg.PodHeaders)
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		fail(statusKind(resp.StatusCode), fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg))))
		return
	}
	if s.cfg.Stream {
		err = s.readStream(resp.Body, start, res)
	} else {
		err = s.readWhole(resp.Body, start, res)
	}
	res.E2E = s.since() - start
	if err != nil {
		res.Err, res.Detail = classify(parent, err, true), err.Error()
	}
}

// readStream reads an SSE body: the first text chunk sets TTFT, later ones
// add inter-token gaps, a usage chunk sets the token counts.
func (s *sender) readStream(body io.Reader, start time.Duration, res *Result) error {
	var last time.Duration
	chunks := 0
	err := readEvents(body, func(data []byte) error {
		now := s.since()
		c, err := decodeChunk(data)
		if err != nil {
			return err
		}
		if c.hasText() {
			if chunks == 0 {
				res.TTFT = now - start
			} else {
				res.ITL = append(res.ITL, now-last)
			}
			last = now
			chunks++
		}
		if c.Usage != nil {
			setUsage(res, c.Usage.PromptTokens, c.Usage.Cached(), c.Usage.CompletionTokens)
		}
		return nil
	})
	if !res.UsageReported {
		res.CompletionTokens = chunks
	}
	return err
}

// readWhole reads a non-streamed response; its TTFT is its end.
func (s *sender) readWhole(body io.Reader, start time.Duration, res *Result) error {
	data, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		return err
	}
	res.TTFT = s.since() - start
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("replay: bad response body: %v", err)
	}
	if c.Error != nil {
		return fmt.Errorf("replay: error body: %s", c.Error.Message)
	}
	if c.Usage != nil {
		setUsage(res, c.Usage.PromptTokens, c.Usage.Cached(), c.Usage.CompletionTokens)
	}
	return nil
}

// setUsage records the usage of a response.
func setUsage(res *Result, prompt, cached, completion int) {
	res.UsageReported = true
	if prompt > 0 {
		res.PromptTokens = prompt
	}
	res.CachedTokens = cached
	res.CompletionTokens = completion
}

// podOf returns the first pod header present, or UnknownPod.
func podOf(h http.Header, names []string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return UnknownPod
}
