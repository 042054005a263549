package tokenizer

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestChatTemplates checks the built-in templates' output text.
func TestChatTemplates(t *testing.T) {
	conv := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: " Hi!\n"}}
	user := []Message{{Role: "user", Content: "Hi"}}
	tests := []struct {
		name     string
		template string
		msgs     []Message
		gen      bool
		want     string
	}{
		{"chatml", "chatml", conv, true, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi!\n<|im_end|>\n<|im_start|>assistant\n"},
		{"chatml no generation prompt", "chatml", user, false, "<|im_start|>user\nHi<|im_end|>\n"},
		{"chatml empty", "chatml", nil, true, "<|im_start|>assistant\n"},
		{"qwen2 default system", "qwen2", user, true, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"qwen2 own system", "qwen2", conv, false, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi!\n<|im_end|>\n"},
		{"qwen2.5 default system", "qwen2.5", user, true, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"llama3", "llama3", conv, true, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3 trims python whitespace", "llama3", []Message{{Role: "user", Content: "\x1c x \u3000"}}, false, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>"},
		{"llama3 empty", "llama3", nil, true, "<|start_header_id|>assistant<|end_header_id|>\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := ChatTemplateByName(tt.template)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(tt.msgs, tt.gen)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Render got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestChatTemplateErrors checks unknown names and refused messages.
func TestChatTemplateErrors(t *testing.T) {
	if _, err := ChatTemplateByName("jinja"); err == nil {
		t.Error("ChatTemplateByName(jinja) got no error, want one")
	}
	tmpl, _ := ChatTemplateByName("qwen2.5")
	if _, err := tmpl.Render([]Message{{Role: "tool", Content: "42"}}, true); !errors.Is(err, ErrUnsupportedMessage) {
		t.Errorf("qwen2.5 tool message got %v, want ErrUnsupportedMessage", err)
	}
}

// TestEncodeChat checks that EncodeChat encodes the rendered template
// without extra special tokens, and fails without a template.
func TestEncodeChat(t *testing.T) {
	ctx := context.Background()
	msgs := []Message{{Role: "user", Content: "the router"}}
	tmpl, _ := ChatTemplateByName("llama3")
	tok := loadFixture(t, "llama3", Options{ChatTemplate: tmpl})
	text, _ := tmpl.Render(msgs, true)
	want := tok.EncodeString(text, false, nil)
	got, err := tok.EncodeChat(ctx, msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("EncodeChat got %v, want %v", got, want)
	}
	bot := tok.EncodeString("<|begin_of_text|>", false, nil)
	if got[0] != bot[0] || got[1] == bot[0] {
		t.Errorf("EncodeChat got %v, want exactly one <|begin_of_text|> (%d) first", got, bot[0])
	}
	plain := loadFixture(t, "llama3", Options{})
	if _, err := plain.EncodeChat(ctx, msgs, nil); !errors.Is(err, ErrNoChatTemplate) {
		t.Errorf("EncodeChat without template got %v, want ErrNoChatTemplate", err)
	}
}
