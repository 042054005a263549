package plugins

import (
	"context"
	"errors"
	"net/http"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// ErrNoTokenizer is returned for a text prompt when no tokenizer is configured.
var ErrNoTokenizer = errors.New("plugins: text prompt but no tokenizer configured (send token ids, or configure one)")

// Tokens writes the prompt's token ids: the request's own, or the
// tokenizer's for a text prompt or chat.
type Tokens struct{ tok Tokenizer }

var _ pipeline.Preparer = (*Tokens)(nil)

func (*Tokens) Type() string               { return "tokens" }
func (*Tokens) Reads() []pipeline.SlotRef  { return noSlots }
func (*Tokens) Writes() []pipeline.SlotRef { return pipeline.Refs(pipeline.Tokens.Ref()) }

// Prepare computes the tokens once per decision.
func (p *Tokens) Prepare(ctx context.Context, rc *pipeline.Context) error {
	if _, done := pipeline.Tokens.Get(rc); done {
		return nil
	}
	if rc.Req.TokenIDs != nil {
		pipeline.Tokens.Set(rc, rc.Req.TokenIDs)
		return nil
	}
	if p.tok == nil {
		return ErrNoTokenizer
	}
	ids, err := p.tok.Tokenize(ctx, rc.Req)
	if err != nil {
		return err
	}
	pipeline.Tokens.Set(rc, ids)
	return nil
}

// BlockHashes writes the chained block hashes of the tokens, seeded with
// the request's cache identity (model, LoRA adapter, cache salt, route
// template and virtual layer), as the event applier hashes engine blocks.
type BlockHashes struct{ h blockhash.Hasher }

var _ pipeline.Preparer = (*BlockHashes)(nil)

func (*BlockHashes) Type() string               { return "block-hashes" }
func (*BlockHashes) Reads() []pipeline.SlotRef  { return pipeline.Refs(pipeline.Tokens.Ref()) }
func (*BlockHashes) Writes() []pipeline.SlotRef { return pipeline.Refs(pipeline.BlockHashes.Ref()) }

// Keys returns the cache-identity keys of a request.
func Keys(req *pipeline.Request) blockhash.Keys {
	k := blockhash.Identity(req.Model, req.LoRA, req.CacheSalt)
	if req.HasRoute {
		k.RouteTemplate = req.RouteTemplate
		k.VirtualLayer, k.HasVirtualLayer = req.RouteStep, true
	}
	return k
}

// Prepare hashes once per decision.
func (p *BlockHashes) Prepare(_ context.Context, rc *pipeline.Context) error {
	if _, done := pipeline.BlockHashes.Get(rc); done {
		return nil
	}
	toks, _ := pipeline.Tokens.Get(rc)
	pipeline.BlockHashes.Set(rc, p.h.Chain(blockhash.Seed(Keys(rc.Req)), toks, rc.HashScratch()))
	return nil
}

// PrefixMatch writes the index's answer for the block hashes.
type PrefixMatch struct{ ix Matcher }

var _ pipeline.Preparer = (*PrefixMatch)(nil)

func (*PrefixMatch) Type() string               { return "prefix-match" }
func (*PrefixMatch) Reads() []pipeline.SlotRef  { return pipeline.Refs(pipeline.BlockHashes.Ref()) }
func (*PrefixMatch) Writes() []pipeline.SlotRef { return pipeline.Refs(pipeline.Match.Ref()) }

// Prepare queries the index once per decision.
func (p *PrefixMatch) Prepare(_ context.Context, rc *pipeline.Context) error {
	if _, done := pipeline.Match.Get(rc); done {
		return nil
	}
	hs, _ := pipeline.BlockHashes.Get(rc)
	m := rc.MatchScratch()
	p.ix.Match(hs, m)
	pipeline.Match.Set(rc, m)
	return nil
}

// SessionKey writes the session key from a request header.
type SessionKey struct{ Header string }

var _ pipeline.Preparer = (*SessionKey)(nil)

func (*SessionKey) Type() string               { return "session" }
func (*SessionKey) Reads() []pipeline.SlotRef  { return noSlots }
func (*SessionKey) Writes() []pipeline.SlotRef { return pipeline.Refs(pipeline.SessionKey.Ref()) }

// Prepare reads the header.
func (p *SessionKey) Prepare(_ context.Context, rc *pipeline.Context) error {
	if rc.Req.Header != nil {
		pipeline.SessionKey.Set(rc, http.Header(rc.Req.Header).Get(p.Header))
	}
	return nil
}

// HashKey writes a stable hash of the first Blocks block hashes, so that
// requests sharing a prefix share the key (consistent-hash picking).
type HashKey struct{ Blocks int }

var _ pipeline.Preparer = (*HashKey)(nil)

func (*HashKey) Type() string               { return "hash-key" }
func (*HashKey) Reads() []pipeline.SlotRef  { return pipeline.Refs(pipeline.BlockHashes.Ref()) }
func (*HashKey) Writes() []pipeline.SlotRef { return pipeline.Refs(pipeline.HashKey.Ref()) }

// Prepare hashes the prefix: the hash of the last included block already
// stands for all before it.
func (p *HashKey) Prepare(_ context.Context, rc *pipeline.Context) error {
	hs, _ := pipeline.BlockHashes.Get(rc)
	if len(hs) == 0 {
		pipeline.HashKey.Set(rc, uint64(blockhash.Seed(Keys(rc.Req))))
		return nil
	}
	pipeline.HashKey.Set(rc, uint64(hs[min(p.Blocks, len(hs))-1]))
	return nil
}
