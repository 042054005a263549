package cell

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// Attributes of the cell.tokenize span.
const (
	tokenizerKindKey = attribute.Key("cellrouter.tokenizer.kind")      // "local" or "remote"
	tokenizerHitKey  = attribute.Key("cellrouter.tokenizer.cache_hit") // answered from the cell's cache
	tokensKey        = attribute.Key("cellrouter.tokens")              // ids produced
)

// tracedTokenizer puts each tokenization of a text prompt or chat in its
// own span, cell.tokenize, a child of the prepare stage's span: a remote
// /tokenize call costs a round trip to a pod, which the trace should show
// apart from the rest of prepare. The wrapped tokenizer says how it
// answered with noteTokenize.
type tracedTokenizer struct {
	inner plugins.Tokenizer
	obs   observer
}

var _ plugins.Tokenizer = tracedTokenizer{}

// Tokenize implements plugins.Tokenizer.
func (t tracedTokenizer) Tokenize(ctx context.Context, req *pipeline.Request) ([]uint32, error) {
	ctx, span := t.obs.tr.Get().Start(ctx, "cell.tokenize", trace.WithAttributes(
		telemetry.CellKey.String(t.obs.cell), attribute.Bool("cellrouter.chat", req.Chat)))
	defer span.End()
	ids, err := t.inner.Tokenize(ctx, req)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return ids, err
	}
	if span.IsRecording() {
		span.SetAttributes(tokensKey.Int(len(ids)))
	}
	return ids, nil
}

// noteTokenize records on the tokenize span of ctx (if any) which
// tokenizer answered, whether the cache did, and for a remote call which
// pod.
func noteTokenize(ctx context.Context, kind string, cacheHit bool, pod string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tokenizerKindKey.String(kind), tokenizerHitKey.Bool(cacheHit))
	if pod != "" {
		span.SetAttributes(attribute.String("cellrouter.pod", pod))
	}
}
