package enginemetrics

import (
	"errors"
	"fmt"
)

// Engine names an engine type, which decides the metric names read.
type Engine string

// The engine types. EngineAuto reads both families and uses whichever
// appears (vLLM's when both do).
const (
	EngineAuto   Engine = "auto"
	EngineVLLM   Engine = "vllm"
	EngineSGLang Engine = "sglang"
)

// Names are the metric families read from one engine type. An empty name
// is not read.
type Names struct {
	// Waiting is a gauge of the requests queued, not yet running.
	Waiting string `yaml:"waiting"`
	// Running is a gauge of the requests in the running batch.
	Running string `yaml:"running"`
	// KVUsage is a gauge of the KV cache's used fraction, in [0, 1].
	KVUsage string `yaml:"kv_usage"`
	// LoRAInfo is vLLM's info gauge of the adapters loaded (labels
	// running_lora_adapters, waiting_lora_adapters, max_lora), its value a
	// timestamp: the newest series is read.
	LoRAInfo string `yaml:"lora_info"`
	// CacheConfig is vLLM's info gauge of the cache's shape (labels
	// num_gpu_blocks and block_size): the capacity in tokens.
	CacheConfig string `yaml:"cache_config"`
}

// VLLMNames are vLLM's (V1 engine) metric names.
func VLLMNames() Names {
	return Names{
		Waiting:     "vllm:num_requests_waiting",
		Running:     "vllm:num_requests_running",
		KVUsage:     "vllm:kv_cache_usage_perc",
		LoRAInfo:    "vllm:lora_requests_info",
		CacheConfig: "vllm:cache_config_info",
	}
}

// SGLangNames are SGLang's metric names. SGLang publishes no adapter or
// cache-shape gauge; its capacity comes from the pod's kv_blocks.
func SGLangNames() Names {
	return Names{
		Waiting: "sglang:num_queue_reqs",
		Running: "sglang:num_running_reqs",
		KVUsage: "sglang:token_usage",
	}
}

// ErrNames is returned for an override that names no field of Names.
var ErrNames = errors.New("enginemetrics: unknown metric name key")

// NamesFor returns the families engine reads (both for EngineAuto, vLLM's
// first), with overrides (keys waiting, running, kv_usage, lora_info,
// cache_config) applied to each.
func NamesFor(engine Engine, overrides map[string]string) ([]Names, error) {
	var out []Names
	switch engine {
	case EngineVLLM:
		out = []Names{VLLMNames()}
	case EngineSGLang:
		out = []Names{SGLangNames()}
	case EngineAuto, "":
		out = []Names{VLLMNames(), SGLangNames()}
	default:
		return nil, fmt.Errorf("enginemetrics: engine %q: want auto, vllm or sglang", engine)
	}
	for i := range out {
		for k, v := range overrides {
			switch k {
			case "waiting":
				out[i].Waiting = v
			case "running":
				out[i].Running = v
			case "kv_usage":
				out[i].KVUsage = v
			case "lora_info":
				out[i].LoRAInfo = v
			case "cache_config":
				out[i].CacheConfig = v
			default:
				return nil, fmt.Errorf("%w %q (want waiting, running, kv_usage, lora_info or cache_config)", ErrNames, k)
			}
		}
	}
	return out, nil
}
