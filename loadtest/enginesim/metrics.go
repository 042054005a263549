package enginesim

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serveMetrics writes the pod's metrics in the Prometheus text format, under
// vLLM's names where vLLM has one (labels model_name and engine, as vLLM's
// V1 engine sets them) and enginesim: for the simulator's own.
func (p *Pod) serveMetrics(w http.ResponseWriter) {
	s := p.Stats()
	labels := `model_name="` + escapeLabel(p.cfg.Model) + `",engine="0"`
	var b []byte
	metric := func(name, typ, help, extra string, v float64) {
		b = append(b, "# HELP "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = append(b, help...)
		b = append(b, "\n# TYPE "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = append(b, typ...)
		b = append(b, '\n')
		b = append(b, name...)
		b = append(b, '{')
		if extra != "" {
			b = append(b, extra...)
			b = append(b, ',')
		}
		b = append(b, labels...)
		b = append(b, "} "...)
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
		b = append(b, '\n')
	}
	// vLLM's usage counts the blocks running requests hold; cached blocks
	// no request uses are free (evictable) to it.
	used, runningLoRA, waitingLoRA := p.load.snapshot()
	usage := 0.0
	if s.CacheCapacity > 0 {
		usage = min(float64(used)/float64(s.CacheCapacity), 1)
	}
	cacheInfo := `block_size="` + strconv.Itoa(p.cfg.BlockSize) + `",num_gpu_blocks="` + strconv.Itoa(p.cfg.Blocks) +
		`",enable_prefix_caching="True",cache_dtype="auto"`
	metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", "", float64(s.Running))
	metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", "", float64(s.Waiting))
	metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", "", usage)
	metric("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig.", cacheInfo, 1)
	if len(p.cfg.LoRAAdapters) > 0 {
		// vLLM's info gauge: the value is the time of the reading.
		loraInfo := `max_lora="` + strconv.Itoa(max(p.cfg.MaxLoRAs, 1)) + `",running_lora_adapters="` + escapeLabel(runningLoRA) +
			`",waiting_lora_adapters="` + escapeLabel(waitingLoRA) + `"`
		metric("vllm:lora_requests_info", "gauge", "Running stats on lora requests.", loraInfo, float64(time.Now().UnixNano())/1e9)
	}
	metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", "", float64(s.PromptTokens))
	metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", "", float64(s.CachedTokens))
	metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", "", float64(s.PromptTokens))
	metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", "", float64(s.OutputTokens))
	metric("vllm:request_success_total", "counter", "Count of successfully processed requests.", `finished_reason="length"`, float64(s.Requests))
	metric("enginesim:requests_rejected_total", "counter", "Generation requests answered with a client error.", "", float64(s.Rejected))
	metric("enginesim:requests_cancelled_total", "counter", "Requests whose client went away before the answer was complete.", "", float64(s.Cancelled))
	metric("enginesim:kv_transferred_tokens_total", "counter", "Prompt tokens received from a remote prefill.", "", float64(s.TransferredTokens))
	metric("enginesim:kv_event_batches_total", "counter", "KV-event batches published.", "", float64(s.EventBatches))
	metric("enginesim:kv_cache_blocks", "gauge", "Blocks in the KV cache.", "", float64(s.CacheBlocks))
	h := w.Header()
	h.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// labelEscaper escapes a Prometheus label value.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// escapeLabel escapes a label value.
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
