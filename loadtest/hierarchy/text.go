package hierarchy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// The prompt kinds of a run (Config.Prompt).
const (
	// PromptTokens expands every hash id to 512 token ids (the default).
	PromptTokens = "tokens"
	// PromptText expands every hash id to text (trace.AppendText): a
	// completion's text prompt.
	PromptText = "text"
	// PromptChat makes every hash id's text one chat message (the first a
	// system message, then user and assistant in turn).
	PromptChat = "chat"
)

// TokenizeReport says how text prompts were tokenized (nil for token
// prompts).
type TokenizeReport struct {
	// Tokenizer is the tokenizer.json ("demo" for tokenizer.DemoJSON) and
	// ChatTemplate its template.
	Tokenizer    string `json:"tokenizer"`
	ChatTemplate string `json:"chat_template"`
	// TokensPerRequest is the mean prompt length under the tokenizer.
	TokensPerRequest float64 `json:"tokens_per_request"`
	// GlobalMeanUs and GlobalP99Us are the global tier's tokenization per
	// request (global.Tokenizer, in process, its cache included).
	GlobalMeanUs float64 `json:"global_mean_us"`
	GlobalP99Us  float64 `json:"global_p99_us"`
	// CacheHitRatio is the global tokenizer's segment cache hits over
	// lookups; CacheBytes what it held at the end.
	CacheHitRatio float64 `json:"cache_hit_ratio"`
	CacheBytes    int64   `json:"cache_bytes"`
	// Mismatches counts requests whose chain at the global tier or at the
	// serving cell differed from the engine's: it must be 0.
	Mismatches int64 `json:"mismatches"`
}

// texter turns trace records into text prompts or chats and tokenizes
// them as each tier does: the engine (the pods' tokenizer), the global
// tier (global.Tokenizer, with its segment cache) and the cells (their
// Tokens preparer, through cellTokenizer).
type texter struct {
	kind    string
	engine  *tokenizer.BPE
	cell    *cellTokenizer
	global  *global.Tokenizer
	dir     string // holds the demo tokenizer file; removed by close
	name    string
	tmpl    string
	took    []time.Duration
	tokens  int64
	misses  int64
	request *pipeline.Request
	greq    global.Request
	text    []byte
}

func newTexter(cfg Config) (*texter, error) {
	x := &texter{kind: cfg.Prompt, tmpl: cfg.ChatTemplate, name: cfg.TokenizerJSON, request: &pipeline.Request{Model: Model}}
	if x.tmpl == "" {
		x.tmpl = tokenizer.DemoChatTemplate
	}
	file := cfg.TokenizerJSON
	if file == "" {
		var err error
		if x.dir, err = os.MkdirTemp("", "cellrouter-hierarchy-"); err != nil {
			return nil, fmt.Errorf("hierarchy: %w", err)
		}
		file, x.name = filepath.Join(x.dir, "tokenizer.json"), "demo"
		if err := os.WriteFile(file, tokenizer.DemoJSON(), 0o600); err != nil {
			x.close()
			return nil, fmt.Errorf("hierarchy: %w", err)
		}
	}
	tmpl, err := tokenizer.ChatTemplateByName(x.tmpl)
	if err != nil {
		x.close()
		return nil, fmt.Errorf("hierarchy: %w", err)
	}
	// The engine and the cells have no segment cache (celld has none);
	// the global tier has its default one.
	if x.engine, err = tokenizer.LoadFile(file, tokenizer.Options{ChatTemplate: tmpl}); err != nil {
		x.close()
		return nil, fmt.Errorf("hierarchy: %w", err)
	}
	cellBPE, err := tokenizer.LoadFile(file, tokenizer.Options{ChatTemplate: tmpl})
	if err != nil {
		x.close()
		return nil, fmt.Errorf("hierarchy: %w", err)
	}
	x.cell = &cellTokenizer{bpe: cellBPE}
	tc := global.DefaultTokenizeConfig()
	tc.Remote = false
	tc.Models = []global.ModelTokenizer{{Model: Model, File: file, ChatTemplate: x.tmpl}}
	if x.global, err = global.NewTokenizer(tc); err != nil {
		x.close()
		return nil, fmt.Errorf("hierarchy: %w", err)
	}
	return x, nil
}

// close removes the temporary tokenizer file; a nil texter is fine.
func (x *texter) close() {
	if x != nil && x.dir != "" {
		os.RemoveAll(x.dir)
	}
}

// prepare builds rec's prompt and returns the engine's tokens of it; the
// request for the cells' selectors is x.request.
func (x *texter) prepare(rec *trace.Record, dst []uint32) []uint32 {
	x.text = x.text[:0]
	req := x.request
	*req = pipeline.Request{Model: Model, Messages: req.Messages[:0]}
	x.greq = global.Request{Model: Model, Messages: x.greq.Messages[:0]}
	if x.kind == PromptText {
		for _, id := range rec.HashIDs {
			x.text = trace.AppendText(x.text, id)
		}
		req.Prompt = string(x.text)
		x.greq.Prompt = req.Prompt
		dst = x.engine.EncodeString(req.Prompt, true, dst)
		x.tokens += int64(len(dst))
		return dst
	}
	req.Chat, x.greq.Chat = true, true
	for j, id := range rec.HashIDs {
		role := "system"
		if j > 0 {
			role = []string{"assistant", "user"}[j%2]
		}
		m := tokenizer.Message{Role: role, Content: string(trace.AppendText(nil, id))}
		req.Messages = append(req.Messages, pipeline.Message{Role: m.Role, Content: m.Content})
		x.greq.Messages = append(x.greq.Messages, m)
	}
	dst, err := x.engine.EncodeChat(context.Background(), x.greq.Messages, dst)
	if err != nil {
		panic(fmt.Sprintf("hierarchy: the %s template refused a plain chat: %v", x.tmpl, err))
	}
	x.tokens += int64(len(dst))
	return dst
}

// globalTokens tokenizes the request at the global tier, timed, and
// counts a mismatch with the engine's tokens.
func (x *texter) globalTokens(ctx context.Context, engine, dst []uint32) ([]uint32, error) {
	start := time.Now()
	out, _, err := x.global.Tokenize(ctx, &x.greq, nil, dst)
	x.took = append(x.took, time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("hierarchy: global tokenize: %w", err)
	}
	if !slices.Equal(out, engine) {
		x.misses++
	}
	return out, nil
}

// checkCell counts a mismatch when the serving cell's chain (its
// block-hashes slot after the hand-off decision) is not the engine's.
func (x *texter) checkCell(rc *pipeline.Context, engine []blockhash.Hash) {
	hs, _ := pipeline.BlockHashes.Get(rc)
	if !slices.Equal(hs, engine) {
		x.misses++
	}
}

// report summarizes the run's tokenization.
func (x *texter) report(requests int) *TokenizeReport {
	r := &TokenizeReport{Tokenizer: x.name, ChatTemplate: x.tmpl, Mismatches: x.misses, TokensPerRequest: ratio(x.tokens, int64(requests))}
	if len(x.took) > 0 {
		var sum time.Duration
		for _, d := range x.took {
			sum += d
		}
		r.GlobalMeanUs = float64(sum.Nanoseconds()) / float64(len(x.took)) / 1e3
		sort.Slice(x.took, func(i, j int) bool { return x.took[i] < x.took[j] })
		r.GlobalP99Us = float64(x.took[len(x.took)*99/100].Nanoseconds()) / 1e3
	}
	st := x.global.CacheStats()
	r.CacheHitRatio, r.CacheBytes = ratio(int64(st.Hits), int64(st.Hits+st.Misses)), st.Bytes
	return r
}

// cellTokenizer is what a cell configured with a tokenizer file and chat
// template (routing.tokenizer_json, routing.chat_template) does with a
// text prompt (special tokens added) or a chat (rendered with the
// generation prompt).
type cellTokenizer struct{ bpe *tokenizer.BPE }

var _ plugins.Tokenizer = (*cellTokenizer)(nil)

func (c *cellTokenizer) Tokenize(ctx context.Context, req *pipeline.Request) ([]uint32, error) {
	if !req.Chat {
		return c.bpe.EncodeString(req.Prompt, true, nil), nil
	}
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	return c.bpe.EncodeChat(ctx, msgs, nil)
}
