package enginesim

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Role says which leg of disaggregated serving a pod accepts, as vLLM's
// kv_transfer_config kv_role does.
type Role string

// The pod roles.
const (
	// RoleBoth serves plain requests and both legs of disaggregated ones.
	RoleBoth Role = "both"
	// RolePrefill serves plain requests and prefill legs
	// (kv_transfer_params.do_remote_decode); it rejects decode legs.
	RolePrefill Role = "prefill"
	// RoleDecode serves plain requests and decode legs
	// (kv_transfer_params.do_remote_prefill); it rejects prefill legs.
	RoleDecode Role = "decode"
)

// Defaults of Config; see the fields for what they mean.
const (
	DefaultModel            = "enginesim"
	DefaultBlocks           = 4096
	DefaultMaxModelLen      = 131072
	DefaultMaxRunning       = 32
	DefaultMaxTokens        = 16
	DefaultPrefillPerToken  = 20 * time.Microsecond
	DefaultDecodePerToken   = 2 * time.Millisecond
	DefaultTokensPerChunk   = 1
	DefaultMaxBodyBytes     = 32 << 20
	DefaultEventBufferBatch = 10000
)

// Config configures one simulated engine pod. Every field has a default
// (DefaultConfig); Validate names the first bad field.
type Config struct {
	// ID is the pod's id: the pod part of its KV-event topic
	// kv@<ID>@<Model> and the remote_engine_id of its prefill answers. ""
	// means the pod's HTTP address ("127.0.0.1:41234"), as deployments name
	// pods by address, or "enginesim" when the pod does not listen. It must
	// not contain '@'.
	ID string
	// Model is the served model name. Requests naming another model get 404;
	// requests naming none are served. It is also the Model of the chain
	// seed (blockhash.Keys{Model: Model}), so the pod's block hashes are the
	// router's. Default DefaultModel.
	Model string
	// Role is the disaggregation role. Default RoleBoth.
	Role Role
	// BlockSize is the KV block size in tokens. Default 16 (vLLM's).
	BlockSize int
	// Blocks is the KV cache capacity in blocks (vLLM's num_gpu_blocks).
	// Default DefaultBlocks (4096, 64k tokens at block size 16).
	Blocks int
	// MaxModelLen is the context length: a request whose prompt plus
	// max_tokens exceeds it is rejected with 400, as vLLM does. Default
	// DefaultMaxModelLen.
	MaxModelLen int
	// Vocab is the vocabulary size: prompt token ids must be below it (vLLM
	// rejects out-of-vocabulary ids), and the tokenizer maps words into
	// [ReservedTokens, Vocab). Default trace.Vocab (128000), so trace-derived
	// prompts are accepted.
	Vocab int
	// Tokenizer tokenizes text prompts and chats; nil means the word
	// hasher Tokenizer{Vocab} with RenderChat's template. An HFTokenizer
	// makes the pod tokenize as a real model does. Vocab still bounds the
	// ids of token-array prompts and of generated tokens.
	Tokenizer TextTokenizer
	// LoRAAdapters are LoRA adapter names the pod serves besides Model: a
	// request naming one as its model is served as the base model (the
	// simulator models no adapter weights: its blocks are the base model's)
	// and reported in vllm:lora_requests_info while it waits and runs.
	LoRAAdapters []string
	// MaxLoRAs is vLLM's max_loras, reported in lora_requests_info.
	// Default 1 when LoRAAdapters is set.
	MaxLoRAs int
	// MaxRunning is the running-batch limit (vLLM's max_num_seqs): at most
	// this many requests prefill or decode at once, and only while their
	// KV blocks fit in Blocks together; the others wait in a FIFO queue.
	// Default DefaultMaxRunning.
	MaxRunning int
	// DefaultMaxTokens is the output length of a request that gives neither
	// max_tokens nor max_completion_tokens. Default 16 (vLLM's completions
	// default).
	DefaultMaxTokens int
	// PrefillPerToken is the modelled prefill time of one uncached prompt
	// token. Default 20µs (a 4k-token miss costs 82ms).
	PrefillPerToken time.Duration
	// DecodePerToken is the modelled time of one output token after the
	// first (the first comes out of the prefill). Default 2ms.
	DecodePerToken time.Duration
	// TimeScale multiplies every modelled duration before the pod sleeps it:
	// 1 is real time, 0.01 replays a hundred times faster, 0 never sleeps.
	// The modelled (unscaled) durations are what responses report. Default 1.
	TimeScale float64
	// TokensPerChunk is how many output tokens one streamed chunk carries.
	// Default 1, as vLLM streams.
	TokensPerChunk int
	// HTTPAddr is where NewPod listens, for example "127.0.0.1:0" (any free
	// port; see Pod.HTTPAddr). "" means no listener: serve Pod.Handler
	// yourself. Default "127.0.0.1:0".
	HTTPAddr string
	// MaxBodyBytes bounds a request body. Default 32 MiB.
	MaxBodyBytes int64
	// Events configures the KV-event publisher.
	Events EventsConfig
	// Logger receives the pod's diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

// EventsConfig configures a pod's KV-event publisher (package vllmpub).
type EventsConfig struct {
	// Disabled turns KV events off: no sockets are opened.
	Disabled bool
	// Endpoint is the PUB socket's ZMQ address. Default
	// "tcp://127.0.0.1:0" (any free port; see Pod.ZMQEndpoint).
	Endpoint string
	// Connect makes the PUB socket dial Endpoint (a cell that binds)
	// instead of binding it.
	Connect bool
	// ReplayEndpoint is where the ROUTER replay socket binds; "" means no
	// replay socket. Default "tcp://127.0.0.1:0".
	ReplayEndpoint string
	// Form is the payload layout: vllmwire.FormArray (default) or
	// vllmwire.FormMap, optionally with FormOmitRank and FormTrimNils.
	Form vllmwire.Form
	// BufferSize is how many batches the replay socket keeps. Default
	// 10000, as vLLM.
	BufferSize int
	// Skip, when not nil, makes the publisher number and buffer but not
	// send the batches it returns true for (injected loss); see
	// vllmpub.Config.Skip.
	Skip func(seq uint64) bool
}

// DefaultConfig returns the documented defaults: a pod of model
// DefaultModel listening on a free loopback port, publishing array-form
// events on free loopback ports, in real time.
func DefaultConfig() Config {
	return Config{
		Model:            DefaultModel,
		Role:             RoleBoth,
		BlockSize:        blockhash.DefaultBlockSize,
		Blocks:           DefaultBlocks,
		MaxModelLen:      DefaultMaxModelLen,
		Vocab:            trace.Vocab,
		MaxRunning:       DefaultMaxRunning,
		DefaultMaxTokens: DefaultMaxTokens,
		PrefillPerToken:  DefaultPrefillPerToken,
		DecodePerToken:   DefaultDecodePerToken,
		TimeScale:        1,
		TokensPerChunk:   DefaultTokensPerChunk,
		HTTPAddr:         "127.0.0.1:0",
		MaxBodyBytes:     DefaultMaxBodyBytes,
		Events: EventsConfig{
			Endpoint:       "tcp://127.0.0.1:0",
			ReplayEndpoint: "tcp://127.0.0.1:0",
			Form:           vllmwire.FormArray,
			BufferSize:     DefaultEventBufferBatch,
		},
	}
}

// Validate returns an error naming the first invalid field and its value.
func (c Config) Validate() error {
	switch {
	case strings.Contains(c.ID, "@"):
		return fmt.Errorf("enginesim: Config.ID %q must not contain '@'", c.ID)
	case c.Model == "":
		return fmt.Errorf("enginesim: Config.Model is empty")
	case c.Role != RoleBoth && c.Role != RolePrefill && c.Role != RoleDecode:
		return fmt.Errorf("enginesim: Config.Role %q, want both, prefill or decode", c.Role)
	case c.BlockSize < blockhash.MinBlockSize || c.BlockSize > blockhash.MaxBlockSize:
		return fmt.Errorf("enginesim: Config.BlockSize %d out of range [%d, %d]", c.BlockSize, blockhash.MinBlockSize, blockhash.MaxBlockSize)
	case c.Blocks < 1:
		return fmt.Errorf("enginesim: Config.Blocks %d must be at least 1", c.Blocks)
	case c.MaxModelLen < 2:
		return fmt.Errorf("enginesim: Config.MaxModelLen %d must be at least 2", c.MaxModelLen)
	case c.Vocab < 2*ReservedTokens:
		return fmt.Errorf("enginesim: Config.Vocab %d must be at least %d", c.Vocab, 2*ReservedTokens)
	case c.MaxLoRAs < 0:
		return fmt.Errorf("enginesim: Config.MaxLoRAs %d must not be negative", c.MaxLoRAs)
	case c.MaxRunning < 1:
		return fmt.Errorf("enginesim: Config.MaxRunning %d must be at least 1", c.MaxRunning)
	case c.DefaultMaxTokens < 1:
		return fmt.Errorf("enginesim: Config.DefaultMaxTokens %d must be at least 1", c.DefaultMaxTokens)
	case c.PrefillPerToken < 0:
		return fmt.Errorf("enginesim: Config.PrefillPerToken %v must not be negative", c.PrefillPerToken)
	case c.DecodePerToken < 0:
		return fmt.Errorf("enginesim: Config.DecodePerToken %v must not be negative", c.DecodePerToken)
	case !(c.TimeScale >= 0) || c.TimeScale > 1e6:
		return fmt.Errorf("enginesim: Config.TimeScale %v must be in [0, 1e6]", c.TimeScale)
	case c.TokensPerChunk < 1:
		return fmt.Errorf("enginesim: Config.TokensPerChunk %d must be at least 1", c.TokensPerChunk)
	case c.MaxBodyBytes < 1:
		return fmt.Errorf("enginesim: Config.MaxBodyBytes %d must be at least 1", c.MaxBodyBytes)
	}
	if !c.Events.Disabled {
		e := c.Events
		switch {
		case !strings.Contains(e.Endpoint, "://"):
			return fmt.Errorf("enginesim: Config.Events.Endpoint %q is not a ZMQ address (tcp://host:port)", e.Endpoint)
		case e.ReplayEndpoint != "" && !strings.Contains(e.ReplayEndpoint, "://"):
			return fmt.Errorf("enginesim: Config.Events.ReplayEndpoint %q is not a ZMQ address (tcp://host:port)", e.ReplayEndpoint)
		case e.Form&^(vllmwire.FormMap|vllmwire.FormOmitRank|vllmwire.FormTrimNils) != 0:
			return fmt.Errorf("enginesim: Config.Events.Form %#x has unknown bits", uint8(e.Form))
		case e.BufferSize < 1:
			return fmt.Errorf("enginesim: Config.Events.BufferSize %d must be at least 1", e.BufferSize)
		}
	}
	return nil
}

// scaled returns d multiplied by the time scale.
func (c *Config) scaled(d time.Duration) time.Duration {
	if c.TimeScale == 0 || d <= 0 {
		return 0
	}
	return time.Duration(float64(d) * c.TimeScale)
}
