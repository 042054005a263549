package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// ChatTemplate renders chat messages into the prompt text the model was
// trained on, special tokens included as text. Implementations are
// stateless and safe for concurrent use.
//
// The built-in templates reimplement a few well-known Jinja chat templates
// for plain text messages. Engines render the model's own Jinja template;
// for any model whose template is not built in, configure the Remote
// tokenizer, whose /tokenize call applies the real template.
type ChatTemplate interface {
	// Render returns the prompt for messages, followed by the assistant's
	// generation prompt when addGenerationPrompt is set.
	Render(messages []Message, addGenerationPrompt bool) (string, error)
}

// ErrUnsupportedMessage reports a message a built-in template cannot render
// exactly as the model's Jinja template would (for example a tool result
// for Qwen2.5). Callers fall back to the Remote tokenizer.
var ErrUnsupportedMessage = errors.New("tokenizer: message not supported by built-in chat template")

// chatTemplates are the built-in templates by name.
var chatTemplates = map[string]ChatTemplate{
	"chatml":  chatML{},
	"qwen2":   chatML{defaultSystem: "You are a helpful assistant."},
	"qwen2.5": chatML{defaultSystem: "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.", alwaysSystem: true, noTool: true},
	"llama3":  llama3{},
}

// ChatTemplateByName returns a built-in template:
//
//   - "chatml": <|im_start|>{role}\n{content}<|im_end|>\n per message, then
//     <|im_start|>assistant\n.
//   - "qwen2": chatml with the system message "You are a helpful
//     assistant." put first when the conversation has none (Qwen2-Instruct).
//   - "qwen2.5": chatml whose default system message is Qwen2.5-Instruct's
//     ("You are Qwen, created by Alibaba Cloud. ..."); tool messages are
//     refused with ErrUnsupportedMessage.
//   - "llama3": Llama-3(.0)-Instruct: <|begin_of_text|>, then
//     <|start_header_id|>{role}<|end_header_id|>\n\n{trimmed content}<|eot_id|>
//     per message, then the assistant header. Llama-3.1 and later add a
//     dated system preamble and are not covered.
func ChatTemplateByName(name string) (ChatTemplate, error) {
	t, ok := chatTemplates[name]
	if !ok {
		return nil, fmt.Errorf("tokenizer: unknown chat template %q (built in: %s)", name, strings.Join(ChatTemplateNames(), ", "))
	}
	return t, nil
}

// ChatTemplateNames lists the built-in template names, sorted.
func ChatTemplateNames() []string {
	names := make([]string, 0, len(chatTemplates))
	for n := range chatTemplates {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// chatML is the ChatML format of Qwen and many fine-tunes.
type chatML struct {
	// defaultSystem is put first when the first message is not a system
	// message (and, unless alwaysSystem, the conversation is not empty).
	defaultSystem string
	alwaysSystem  bool
	// noTool refuses tool messages, which the template renders specially.
	noTool bool
}

func (c chatML) Render(messages []Message, addGenerationPrompt bool) (string, error) {
	var b strings.Builder
	b.Grow(renderedSize(messages, len("<|im_start|>\n<|im_end|>\n"), len(c.defaultSystem)+64))
	if c.defaultSystem != "" && (len(messages) > 0 || c.alwaysSystem) && (len(messages) == 0 || messages[0].Role != "system") {
		writeChatML(&b, "system", c.defaultSystem)
	}
	for _, m := range messages {
		if c.noTool && m.Role != "system" && m.Role != "user" && m.Role != "assistant" {
			return "", fmt.Errorf("%w: role %q", ErrUnsupportedMessage, m.Role)
		}
		writeChatML(&b, m.Role, m.Content)
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}

func writeChatML(b *strings.Builder, role, content string) {
	b.WriteString("<|im_start|>")
	b.WriteString(role)
	b.WriteString("\n")
	b.WriteString(content)
	b.WriteString("<|im_end|>\n")
}

// llama3 is the Llama-3-Instruct template.
type llama3 struct{}

func (llama3) Render(messages []Message, addGenerationPrompt bool) (string, error) {
	var b strings.Builder
	b.Grow(renderedSize(messages, len("<|start_header_id|><|end_header_id|>\n\n<|eot_id|>"), 96))
	for i, m := range messages {
		if i == 0 {
			b.WriteString("<|begin_of_text|>")
		}
		b.WriteString("<|start_header_id|>")
		b.WriteString(m.Role)
		b.WriteString("<|end_header_id|>\n\n")
		b.WriteString(strings.TrimFunc(m.Content, isPythonSpace))
		b.WriteString("<|eot_id|>")
	}
	if addGenerationPrompt {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String(), nil
}

// renderedSize is the length of messages rendered with perMessage bytes of
// markup each and extra bytes besides, so Render allocates its text once
// (growing a builder over a long conversation was most of its cost).
func renderedSize(messages []Message, perMessage, extra int) int {
	n := extra
	for _, m := range messages {
		n += perMessage + len(m.Role) + len(m.Content)
	}
	return n
}

// isPythonSpace is Python's str.isspace for one character, which Jinja's
// trim filter uses: Go's unicode.IsSpace plus the separators U+001C..U+001F.
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1C && r <= 0x1F)
}
