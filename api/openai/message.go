package openai

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Message is one chat message as the router sees it.
type Message struct {
	// Role is the author's role: "system", "developer", "user",
	// "assistant", "tool"...
	Role string
	// Name is the optional participant name.
	Name string
	// Content is the message text: the content string, or the text of the
	// content's "text" parts joined with "\n" (as vLLM joins them for a
	// chat template that takes string content). "" for null content.
	Content string
	// Parts is the number of content parts when the content was an array,
	// 0 when it was a string or null.
	Parts int
	// OtherParts counts the content parts that are not text (image_url,
	// input_audio, video_url, file...). The router cannot hash them; a
	// message with OtherParts > 0 has a routing key that is only a prefix
	// approximation.
	OtherParts int
}

// wireMessage is the subset of a message the parser decodes.
type wireMessage struct {
	Role    *string         `json:"role"`
	Name    string          `json:"name"`
	Content json.RawMessage `json:"content"`
}

// wirePart is the subset of a content part the parser decodes.
type wirePart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// parseMessages parses the raw messages array; raw is valid JSON and not
// null.
func parseMessages(raw json.RawMessage) ([]Message, error) {
	if raw[0] != '[' {
		return nil, invalid("messages", "must be an array")
	}
	var wms []wireMessage
	if err := json.Unmarshal(raw, &wms); err != nil {
		return nil, decodeErrorAt("messages", err)
	}
	if len(wms) == 0 {
		return nil, invalid("messages", "must not be empty")
	}
	msgs := make([]Message, len(wms))
	for i, wm := range wms {
		param := "messages[" + strconv.Itoa(i) + "]"
		if wm.Role == nil || *wm.Role == "" {
			return nil, invalid(param+".role", "is required")
		}
		m := Message{Role: *wm.Role, Name: wm.Name}
		if err := parseContent(&m, wm.Content, param+".content"); err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

// parseContent fills m's content fields from a raw content value.
func parseContent(m *Message, raw json.RawMessage, param string) error {
	if isAbsent(raw) {
		return nil
	}
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &m.Content); err != nil {
			return invalid(param, err.Error())
		}
		return nil
	case '[':
	default:
		return invalid(param, "must be a string, an array of content parts or null")
	}
	var parts []wirePart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return decodeErrorAt(param, err)
	}
	m.Parts = len(parts)
	var texts []string
	for j, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "":
			return invalid(param+"["+strconv.Itoa(j)+"].type", "is required")
		default:
			m.OtherParts++
		}
	}
	if len(texts) == 1 {
		m.Content = texts[0]
	} else {
		m.Content = strings.Join(texts, "\n")
	}
	return nil
}

// decodeErrorAt is decodeError for a nested value, prefixing the parameter.
func decodeErrorAt(param string, err error) *RequestError {
	re := decodeError(err)
	if strings.HasPrefix(re.Msg, errSyntax) {
		return re // the body as a whole is at fault
	}
	if re.Param == "" {
		re.Param = param
	} else {
		re.Param = param + "." + re.Param
	}
	return re
}
