package tokenizer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Config chooses how the cell tokenizes a model's prompts.
type Config struct {
	// File is the path of the model's tokenizer.json for the in-process
	// tokenizer; empty means every call goes to the engine's /tokenize.
	File string `yaml:"file" json:"file"`
	// ChatTemplate names a built-in chat template (see ChatTemplateByName)
	// for EncodeChat with File; empty means chat messages go to /tokenize,
	// which applies the model's real template.
	ChatTemplate string `yaml:"chat_template" json:"chat_template"`
	// RemoteURL is the base URL of an engine serving the model, for
	// /tokenize; required unless both File and ChatTemplate are set.
	RemoteURL string `yaml:"remote_url" json:"remote_url"`
	// Model is the served model name sent to /tokenize.
	Model string `yaml:"model" json:"model"`
	// Timeout bounds each /tokenize call.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// CacheSize is the in-process tokenizer's word-cache slot count; zero
	// means DefaultCacheSize and negative disables the cache.
	CacheSize int `yaml:"cache_size" json:"cache_size"`
}

// DefaultConfig returns a Config with a 2 s /tokenize timeout and the
// default cache; File or RemoteURL must still be set.
func DefaultConfig() Config {
	return Config{Timeout: 2 * time.Second}
}

// Validate checks the Config; its errors name the offending field.
func (c Config) Validate() error {
	if c.ChatTemplate != "" {
		if c.File == "" {
			return fmt.Errorf("tokenizer: config chat_template %q needs file", c.ChatTemplate)
		}
		if _, err := ChatTemplateByName(c.ChatTemplate); err != nil {
			return fmt.Errorf("tokenizer: config chat_template: %w", err)
		}
	}
	needRemote := c.File == "" || c.ChatTemplate == ""
	if needRemote && c.RemoteURL == "" {
		return fmt.Errorf("tokenizer: config remote_url is empty but needed (file %q, chat_template %q)", c.File, c.ChatTemplate)
	}
	if c.RemoteURL != "" {
		u, err := url.Parse(c.RemoteURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("tokenizer: config remote_url %q is not an http(s) URL", c.RemoteURL)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("tokenizer: config timeout %v is negative", c.Timeout)
	}
	return nil
}

// New builds the Tokenizer that c describes: the in-process BPE when File
// is set, with chat messages going to /tokenize unless ChatTemplate is set;
// otherwise the Remote tokenizer. client may be nil.
func New(c Config, client *http.Client) (Tokenizer, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var remote *Remote
	if c.RemoteURL != "" {
		remote = &Remote{BaseURL: c.RemoteURL, Model: c.Model, Client: client, Timeout: c.Timeout}
	}
	if c.File == "" {
		return remote, nil
	}
	var opts Options
	opts.CacheSize = c.CacheSize
	if c.ChatTemplate != "" {
		opts.ChatTemplate, _ = ChatTemplateByName(c.ChatTemplate)
	}
	local, err := LoadFile(c.File, opts)
	if err != nil {
		return nil, err
	}
	if c.ChatTemplate != "" {
		return local, nil
	}
	return localPromptRemoteChat{local: local, remote: remote}, nil
}

// localPromptRemoteChat encodes prompts in process and chat messages with
// the engine, for models whose chat template is not built in.
type localPromptRemoteChat struct {
	local  *BPE
	remote *Remote
}

func (h localPromptRemoteChat) Encode(ctx context.Context, text string, addSpecial bool, dst []uint32) ([]uint32, error) {
	return h.local.Encode(ctx, text, addSpecial, dst)
}

func (h localPromptRemoteChat) EncodeChat(ctx context.Context, messages []Message, dst []uint32) ([]uint32, error) {
	return h.remote.EncodeChat(ctx, messages, dst)
}
