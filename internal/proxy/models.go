package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/cellrouter/cellrouter/api/openai"
)

// maxModelList bounds a GET /v1/models response read whole: a model list
// with hundreds of LoRA adapters is a few hundred KiB.
const maxModelList = 4 << 20

// ServeModel answers GET /v1/models/{id} (OpenAI's "retrieve model") from
// the model lists of targets, since engines such as vLLM serve only the
// list: it asks targets[0], then targets[1]... (up to Config.MaxAttempts)
// for GET /v1/models until one answers a model list, and writes the entry
// whose id is id in OpenAI's shape, or OpenAI's 404 (code
// "model_not_found") when that list has no such model. When no target
// answers a list, the client gets 503 (no targets), 504 (timeouts) or 502
// as from Forward, and ServeModel returns the error (ErrNoTarget,
// ErrTimeout, ErrUpstream or ErrCanceled) with the details for the logs.
func (p *Proxy) ServeModel(w http.ResponseWriter, r *http.Request, id string, targets []Target) error {
	if len(targets) == 0 {
		err := fmt.Errorf("%w for %s", ErrNoTarget, r.URL.Path)
		writeFailure(w, err)
		return err
	}
	ctx, cancel := p.callContext(r.Context())
	defer cancel()
	hdr := outboundHeader(r.Header)
	var lastErr error
	for _, t := range targets[:min(len(targets), p.cfg.MaxAttempts)] {
		list, err := p.fetchModels(ctx, r, hdr, t)
		if err == nil {
			if m, ok := list.Find(id); ok {
				openai.WriteModel(w, m)
			} else {
				openai.WriteModelNotFound(w, id)
			}
			return nil
		}
		lastErr = err
		if errors.Is(err, ErrCanceled) || ctx.Err() != nil {
			break
		}
	}
	_, err := p.giveUp(ctx, w, r, Result{}, lastErr)
	return err
}

// Models returns the model list t answers to GET /v1/models (an engine's
// served model and its LoRA adapters), within ctx.
func (p *Proxy) Models(ctx context.Context, t Target) (openai.ModelList, error) {
	r := (&http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/v1/models"}, Header: http.Header{}}).WithContext(ctx)
	return p.fetchModels(ctx, r, http.Header{}, t)
}

// fetchModels gets and parses t's GET /v1/models.
func (p *Proxy) fetchModels(ctx context.Context, r *http.Request, hdr http.Header, t Target) (openai.ModelList, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.scheme+"://"+t.Address+"/v1/models", http.NoBody)
	if err != nil {
		return openai.ModelList{}, fmt.Errorf("%w: build model list request for pod %s: %w", ErrUpstream, t.Pod, err)
	}
	req.Header = attemptHeader(hdr, t)
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		return openai.ModelList{}, attemptError(ctx, r, t, "list models of", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxModelList+1))
	if err != nil {
		return openai.ModelList{}, attemptError(ctx, r, t, "read models from", err)
	}
	if resp.StatusCode != http.StatusOK {
		return openai.ModelList{}, fmt.Errorf("%w: pod %s (%s) answered %s to GET /v1/models", ErrUpstream, t.Pod, t.Address, resp.Status)
	}
	if len(data) > maxModelList {
		return openai.ModelList{}, fmt.Errorf("%w: model list of pod %s exceeds %d bytes", ErrUpstream, t.Pod, maxModelList)
	}
	list, err := openai.ParseModelList(data)
	if err != nil {
		return openai.ModelList{}, fmt.Errorf("%w: pod %s: %w", ErrUpstream, t.Pod, err)
	}
	return list, nil
}
