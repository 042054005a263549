package replay

import (
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// PromptTokens appends the prompt of rec to dst and returns it: every hash
// id expanded to trace.TokensPerID tokens, cut to rec.InputLength.
func PromptTokens(dst []uint32, rec trace.Record) []uint32 {
	start := len(dst)
	for _, id := range rec.HashIDs {
		dst = trace.AppendTokens(dst, id)
	}
	return dst[:start+min(len(dst)-start, rec.InputLength)]
}

// MaxTokens returns the max_tokens of rec: its output length, capped at
// limit when limit > 0.
func MaxTokens(rec trace.Record, limit int) int {
	if limit > 0 && rec.OutputLength > limit {
		return limit
	}
	return rec.OutputLength
}

// AppendBody appends the JSON body of the completion request for rec to dst
// and returns it. The token array is written directly (a long prompt is
// hundreds of kilobytes of digits, and encoding/json would reflect over
// every element).
func AppendBody(dst []byte, tokens []uint32, model string, maxTokens int, stream bool) []byte {
	dst = append(dst, `{"model":`...)
	dst = strconv.AppendQuote(dst, model)
	dst = append(dst, `,"prompt":[`...)
	for i, t := range tokens {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(t), 10)
	}
	dst = append(dst, `],"max_tokens":`...)
	dst = strconv.AppendInt(dst, int64(maxTokens), 10)
	// ignore_eos makes engines generate exactly max_tokens, as the trace
	// recorded; temperature 0 keeps runs comparable.
	dst = append(dst, `,"temperature":0,"ignore_eos":true`...)
	if stream {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	} else {
		dst = append(dst, `,"stream":false`...)
	}
	return append(dst, '}')
}

// Schedule returns the send offset of every record from the start of the
// replay: (timestamp - first timestamp) * timeScale / rate. Records out of
// timestamp order keep their order and are sent no earlier than the one
// before them.
func Schedule(recs []trace.Record, timeScale, rate float64) []time.Duration {
	out := make([]time.Duration, len(recs))
	if len(recs) == 0 {
		return out
	}
	t0 := recs[0].Timestamp
	var prev time.Duration
	for i, r := range recs {
		ms := float64(r.Timestamp-t0) * timeScale / rate
		d := time.Duration(ms * float64(time.Millisecond))
		if d < prev {
			d = prev
		}
		out[i], prev = d, d
	}
	return out
}
