package fairness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// outcome is what one request saw.
type outcome struct {
	tenant string
	// idx numbers the request within its tenant's replay, so that the same
	// request can be found in two phases.
	idx int
	// sent is when it was sent; first when its first chunk came (zero
	// without one); done when its answer ended.
	sent, first, done time.Time
	status            int
	// prompt, cached and completion are its usage's tokens.
	prompt, cached, completion int
	// code is the error code of a refusal; err a transport failure.
	code string
	err  error
}

// ok reports whether the request was served.
func (o *outcome) ok() bool { return o.err == nil && o.status == http.StatusOK && !o.first.IsZero() }

// shed reports whether the request was refused with 429.
func (o *outcome) shed() bool { return o.err == nil && o.status == http.StatusTooManyRequests }

// ttft is the time to the first chunk.
func (o *outcome) ttft() time.Duration { return o.first.Sub(o.sent) }

// usage is the part of a streamed chunk read for its usage.
type usage struct {
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// send posts one streamed completion as key and reads it to the end.
func send(ctx context.Context, cl *http.Client, url, key, tenant string, data []byte) outcome {
	o := outcome{tenant: tenant, sent: time.Now()}
	defer func() { o.done = time.Now() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		o.err = err
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := cl.Do(req)
	if err != nil {
		o.err = err
		return o
	}
	defer resp.Body.Close()
	o.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		var u usage
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(raw, &u) == nil && u.Error != nil {
			o.code = u.Error.Code
		}
		return o
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line, found := strings.CutPrefix(sc.Text(), "data: ")
		if !found || line == "" {
			continue
		}
		if o.first.IsZero() {
			o.first = time.Now()
		}
		if line == "[DONE]" {
			break
		}
		var u usage
		if json.Unmarshal([]byte(line), &u) != nil {
			continue
		}
		if u.Error != nil {
			o.err = fmt.Errorf("fairness: stream error %s", u.Error.Code)
		}
		if u.Usage != nil {
			o.prompt, o.completion = u.Usage.PromptTokens, u.Usage.CompletionTokens
			if d := u.Usage.PromptTokensDetails; d != nil {
				o.cached = d.CachedTokens
			}
		}
	}
	if err := sc.Err(); err != nil && o.err == nil {
		o.err = err
	}
	return o
}
