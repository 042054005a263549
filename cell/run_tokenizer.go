package cell

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
)

// cellTokenizer turns text prompts and chats into token ids: in process
// with a configured tokenizer.json (and chat template), else through the
// /tokenize endpoint of a healthy pod, which applies the model's own
// template, so the router's token ids are the engine's. Remote answers are
// cached.
type cellTokenizer struct {
	local   tokenizer.Tokenizer // nil: every call is remote
	chatLoc bool                // local has a chat template
	client  *http.Client
	scheme  string // of the pods' /tokenize: http, or https with tls.pods
	timeout time.Duration
	pods    func() []pipeline.Candidate
	cache   *tokenizer.TokenCache // of remote answers
}

var _ plugins.Tokenizer = (*cellTokenizer)(nil)

// errNoTokenizePod is returned when no healthy pod can tokenize.
var errNoTokenizePod = errors.New("cell: text prompt but no tokenizer_json and no healthy pod to /tokenize it")

func newTokenizer(cfg Config, pods func() []pipeline.Candidate, podTLS *tls.Config) (*cellTokenizer, error) {
	t := &cellTokenizer{client: &http.Client{}, scheme: "http", timeout: cfg.Routing.TokenizeTimeout, pods: pods,
		cache: tokenizer.NewTokenCache(remoteTokenCacheBytes)}
	if podTLS != nil {
		t.client.Transport = &http.Transport{TLSClientConfig: podTLS, MaxIdleConnsPerHost: 16}
		t.scheme = "https"
	}
	if cfg.Routing.TokenizerJSON != "" {
		opts := tokenizer.Options{}
		if cfg.Routing.ChatTemplate != "" {
			tmpl, err := tokenizer.ChatTemplateByName(cfg.Routing.ChatTemplate)
			if err != nil {
				return nil, err
			}
			opts.ChatTemplate = tmpl
			t.chatLoc = true
		}
		bpe, err := tokenizer.LoadFile(cfg.Routing.TokenizerJSON, opts)
		if err != nil {
			return nil, err
		}
		t.local = bpe
	}
	return t, nil
}

// Tokenize implements plugins.Tokenizer.
func (t *cellTokenizer) Tokenize(ctx context.Context, req *pipeline.Request) ([]uint32, error) {
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	if t.local != nil && (!req.Chat || t.chatLoc) {
		noteTokenize(ctx, "local", false, "")
		if req.Chat {
			return t.local.EncodeChat(ctx, msgs, nil)
		}
		return t.local.Encode(ctx, req.Prompt, true, nil)
	}
	key := keyOf(req)
	if ids, ok := t.cache.Get(key, nil); ok {
		noteTokenize(ctx, "remote", true, "")
		return ids, nil
	}
	noteTokenize(ctx, "remote", false, "")
	var last error = errNoTokenizePod
	for _, c := range t.pods() {
		if !c.Healthy || c.Draining {
			continue
		}
		r := &tokenizer.Remote{BaseURL: t.scheme + "://" + c.Address, Model: req.Model, Client: t.client, Timeout: t.timeout}
		var ids []uint32
		var err error
		if req.Chat {
			ids, err = r.EncodeChat(ctx, msgs, nil)
		} else {
			ids, err = r.Encode(ctx, req.Prompt, true, nil)
		}
		if err == nil {
			noteTokenize(ctx, "remote", false, c.Pod)
			t.cache.Put(key, ids)
			return ids, nil
		}
		var se *tokenizer.StatusError
		if ctx.Err() != nil || (errors.As(err, &se) && se.Status >= 400 && se.Status < 500) {
			// A 4xx is the engine refusing the request itself (an unknown
			// model, a prompt too long): another pod would answer alike.
			return nil, err
		}
		last = err
	}
	return nil, last
}
