package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/cellrouter/cellrouter/api/openai"
)

// maxEventBytes bounds one server-sent event, so that a server that never
// sends a newline cannot make the client buffer without limit.
const maxEventBytes = 4 << 20

// errNoDone means a stream ended without its "data: [DONE]" event.
var errNoDone = errors.New("replay: stream ended without [DONE]")

// chunk is the part of a stream chunk (or of a whole response) the client
// reads: whether a choice carries text, usage, and an in-band error.
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta *struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *openai.Usage       `json:"usage"`
	Error *openai.ErrorDetail `json:"error"`
}

// hasText reports whether the chunk carries generated text.
func (c *chunk) hasText() bool {
	for _, ch := range c.Choices {
		if ch.Text != "" || (ch.Delta != nil && ch.Delta.Content != "") {
			return true
		}
	}
	return false
}

// decodeChunk decodes one event's data.
func decodeChunk(data []byte) (chunk, error) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return chunk{}, fmt.Errorf("replay: bad stream chunk: %v", err)
	}
	if c.Error != nil {
		return chunk{}, fmt.Errorf("replay: error in stream: %s", c.Error.Message)
	}
	return c, nil
}

// readEvents reads server-sent events from r and calls fn with the data of
// each (data lines joined by newlines) until the "[DONE]" event, which it
// does not pass on. It returns errNoDone when the body ends first, and fn's
// first error. Comment lines and fields other than data are skipped.
func readEvents(r io.Reader, fn func(data []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	have := false
	for {
		line, err := readLine(br)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return err
			}
			// A last event without its blank line still counts.
			if have && string(data) == openai.StreamDone {
				return nil
			}
			if have {
				if err := fn(data); err != nil {
					return err
				}
			}
			return errNoDone
		}
		switch {
		case len(line) == 0:
			if !have {
				continue
			}
			if string(data) == openai.StreamDone {
				return nil
			}
			if err := fn(data); err != nil {
				return err
			}
			data, have = data[:0], false
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if have {
				data = append(data, '\n')
			}
			if len(data)+len(v) > maxEventBytes {
				return fmt.Errorf("replay: stream event exceeds %d bytes", maxEventBytes)
			}
			data, have = append(data, v...), true
		}
	}
}

// readLine returns the next line without its line ending (LF or CRLF). A
// last line without a newline is returned with a nil error; after it comes
// io.EOF.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > maxEventBytes {
			return nil, fmt.Errorf("replay: stream line exceeds %d bytes", maxEventBytes)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return bytes.TrimRight(line, "\r"), nil
			}
			return nil, err
		}
		line = line[:len(line)-1]
		return bytes.TrimSuffix(line, []byte("\r")), nil
	}
}
