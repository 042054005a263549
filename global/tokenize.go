package global

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/zeebo/xxh3"
	"go.opentelemetry.io/otel/propagation"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// PromptKind says what a request's prompt is.
type PromptKind uint8

// The prompt kinds.
const (
	// PromptTokens is a completion prompt of token ids.
	PromptTokens PromptKind = iota
	// PromptText is a completion's text prompt.
	PromptText
	// PromptChat is a chat's messages.
	PromptChat
)

// String returns "tokens", "text" or "chat".
func (k PromptKind) String() string {
	switch k {
	case PromptText:
		return "text"
	case PromptChat:
		return "chat"
	}
	return "tokens"
}

// Where a request's token ids came from (TokenizeInfo.Source).
const (
	// SourceLocal is an in-process tokenizer (its segment cache included).
	SourceLocal = "local"
	// SourceRemote is a cell's POST /tokenize.
	SourceRemote = "remote"
	// SourceCache is a remote answer the cache kept.
	SourceCache = "cache"
)

// TokenizeInfo says how the global tier tokenized a request's prompt.
type TokenizeInfo struct {
	// Source is SourceLocal, SourceRemote or SourceCache; "" when the
	// prompt was not tokenized.
	Source string
	// Cell is the cell a remote call asked last.
	Cell string
	// Took is the time spent tokenizing, failed attempts included.
	Took time.Duration
	// LocalErr is why the in-process tokenizer could not encode the
	// prompt (the request then went remote), and RemoteErr why the
	// cells could not.
	LocalErr, RemoteErr error
}

// remoteAttempts is the most cells one remote tokenization asks, within
// one RemoteTimeout.
const remoteAttempts = 2

// Tokenizer turns text prompts and chats into the token ids the cells and
// engines see: in process for the models with a tokenizer file (and chat
// template), else through a cell's POST /tokenize. Remote answers and the
// in-process tokenizers' segments share one bounded cache. It is safe for
// concurrent use.
type Tokenizer struct {
	local   map[string]localModel
	remote  bool
	timeout time.Duration
	client  *http.Client
	scheme  string // of the cells' /tokenize: http, or https with mutual TLS
	cache   *tokenizer.TokenCache
	near    *nearest
	keySeed uint64
	hashers sync.Pool
}

// localModel is one model's in-process tokenizer; chat says it has a
// built-in chat template.
type localModel struct {
	bpe  *tokenizer.BPE
	chat bool
}

// NewTokenizer loads the configured tokenizer files.
func NewTokenizer(cfg TokenizeConfig) (*Tokenizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Tokenizer{
		local: map[string]localModel{}, remote: cfg.Remote, timeout: cfg.RemoteTimeout, scheme: "http",
		client: &http.Client{Transport: propagating{&http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}},
		cache:  tokenizer.NewTokenCache(cfg.CacheBytes), near: newNearest(),
		keySeed: 0x6c62272e07bb0142,
	}
	t.hashers.New = func() any { return xxh3.New() }
	for i, m := range cfg.Models {
		opts := tokenizer.Options{Segments: t.cache}
		if m.ChatTemplate != "" {
			opts.ChatTemplate, _ = tokenizer.ChatTemplateByName(m.ChatTemplate)
		}
		bpe, err := tokenizer.LoadFile(m.File, opts)
		if err != nil {
			return nil, fmt.Errorf("%w: tokenize.models[%d] (%s): %v", ErrInvalidConfig, i, m.Model, err)
		}
		t.local[m.Model] = localModel{bpe: bpe, chat: m.ChatTemplate != ""}
	}
	return t, nil
}

// useTLS makes the calls to the cells' /tokenize mutual TLS with c; nil
// keeps them plaintext. It is called before the tokenizer is used.
func (t *Tokenizer) useTLS(c *tls.Config) {
	if c == nil {
		return
	}
	t.client = &http.Client{Transport: propagating{&http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second, TLSClientConfig: c}}}
	t.scheme = "https"
}

// CacheStats returns the tokenization cache's counters.
func (t *Tokenizer) CacheStats() tokenizer.CacheStats { return t.cache.Stats() }

// Tokenize appends the token ids of req's text prompt (with the model's
// special tokens, as for /v1/completions) or chat (rendered with the
// generation prompt, as for /v1/chat/completions) to dst. It tries the
// in-process tokenizer, then the cache of remote answers, then the cells
// among cells, nearest first. The error is ErrNoTokenizer when nothing
// covers the request, or the last remote failure.
func (t *Tokenizer) Tokenize(ctx context.Context, req *Request, cells []CellView, dst []uint32) (_ []uint32, info TokenizeInfo, _ error) {
	start := time.Now()
	defer func() { info.Took = time.Since(start) }() // info is the named result
	if lm, ok := t.local[req.Model]; ok && (!req.Chat || lm.chat) {
		if !req.Chat {
			info.Source = SourceLocal
			return lm.bpe.EncodeString(req.Prompt, true, dst), info, nil
		}
		out, err := lm.bpe.EncodeChat(ctx, req.Messages, dst)
		if err == nil {
			info.Source = SourceLocal
			return out, info, nil
		}
		// A message the built-in template cannot render exactly (a tool
		// result, say) is the engine's to render.
		info.LocalErr = err
	}
	if !t.remote {
		if info.LocalErr != nil {
			return dst, info, info.LocalErr
		}
		return dst, info, ErrNoTokenizer
	}
	key := t.remoteKey(req)
	if out, ok := t.cache.Get(key, dst); ok {
		info.Source = SourceCache
		return out, info, nil
	}
	out, err := t.callRemote(ctx, req, cells, dst, &info)
	if err != nil {
		info.RemoteErr = err
		return dst, info, err
	}
	t.cache.Put(key, out[len(dst):])
	info.Source = SourceRemote
	return out, info, nil
}

// callRemote asks up to remoteAttempts cells, nearest first, within one
// RemoteTimeout.
func (t *Tokenizer) callRemote(ctx context.Context, req *Request, cells []CellView, dst []uint32, info *TokenizeInfo) ([]uint32, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	var order [remoteAttempts]int
	n := t.near.order(cells, order[:])
	if n == 0 {
		return dst, fmt.Errorf("%w: no usable cell to tokenize", ErrTokenize)
	}
	var last error
	for _, i := range order[:n] {
		v := &cells[i]
		info.Cell = v.ID
		r := tokenizer.Remote{BaseURL: t.scheme + "://" + v.HTTPAddr, Model: req.Model, Client: t.client}
		begin := time.Now()
		var out []uint32
		var err error
		if req.Chat {
			out, err = r.EncodeChat(ctx, req.Messages, dst)
		} else {
			out, err = r.Encode(ctx, req.Prompt, true, dst)
		}
		if err == nil {
			t.near.observe(v.ID, time.Since(begin))
			return out, nil
		}
		// A cell that failed counts as far away, so the next request
		// tries another first.
		t.near.observe(v.ID, t.timeout)
		last = fmt.Errorf("%w: cell %s: %w", ErrTokenize, v.ID, err)
		if ctx.Err() != nil {
			break
		}
	}
	return dst, last
}

// remoteKey names a request's remote tokenization: its model, kind and
// prompt or messages, each length-prefixed so that no two requests share
// the bytes hashed.
func (t *Tokenizer) remoteKey(req *Request) tokenizer.CacheKey {
	h := t.hashers.Get().(*xxh3.Hasher)
	defer t.hashers.Put(h)
	h.ResetSeed(t.keySeed)
	var num [24]byte
	field := func(s string) {
		h.Write(strconv.AppendInt(append(num[:0], ':'), int64(len(s)), 10))
		h.WriteString(s)
	}
	field(req.Model)
	if req.Chat {
		field("chat")
		for _, m := range req.Messages {
			field(m.Role)
			field(m.Content)
		}
	} else {
		field("text")
		field(req.Prompt)
	}
	s := h.Sum128()
	return tokenizer.CacheKey{Hi: s.Hi, Lo: s.Lo}
}

// propagating sends the W3C trace context of each request's context along,
// so that the cell's side of a remote tokenization joins the request's
// trace.
type propagating struct{ base http.RoundTripper }

func (p propagating) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	telemetry.Propagator.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return p.base.RoundTrip(r)
}

// observeRTT feeds a probe's round trip into the choice of the nearest
// cell.
func (t *Tokenizer) observeRTT(cell string, d time.Duration) { t.near.observe(cell, d) }

// nearest keeps a smoothed round-trip time per cell (from probes and
// remote tokenize calls), so that remote calls go to the nearest usable
// cell: across regions the round trip is most of their cost.
type nearest struct {
	mu  sync.Mutex
	rtt map[string]time.Duration
}

func newNearest() *nearest { return &nearest{rtt: map[string]time.Duration{}} }

// observe folds one round trip into the cell's average (weight 1/4).
func (n *nearest) observe(cell string, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if old, ok := n.rtt[cell]; ok {
		d = old + (d-old)/4
	}
	n.rtt[cell] = d
}

// order writes into out the indices of the usable cells with the smallest
// round-trip times, nearest first, and returns how many it wrote. A cell
// never measured counts as nearest, so that each is measured once; ties
// go to the less loaded.
func (n *nearest) order(cells []CellView, out []int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	rtt := func(i int) time.Duration { return n.rtt[cells[i].ID] }
	before := func(a, b int) bool {
		ra, rb := rtt(a), rtt(b)
		if ra != rb {
			return ra < rb
		}
		return loadOf(&cells[a]) < loadOf(&cells[b])
	}
	for i := range cells {
		if !cells[i].usable() {
			continue
		}
		// Insertion into the short sorted prefix out[:k].
		j := k
		if k < len(out) {
			k++
		} else if !before(i, out[k-1]) {
			continue
		} else {
			j = k - 1
		}
		for j > 0 && before(i, out[j-1]) {
			out[j] = out[j-1]
			j--
		}
		out[j] = i
	}
	return k
}
