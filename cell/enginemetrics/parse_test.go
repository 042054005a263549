package enginemetrics

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// vllmPage is a vLLM V1 /metrics page of two data-parallel engines, with
// the families Parse skips (histograms, counters) around the ones it reads.
const vllmPage = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="llama"} 3.0
vllm:num_requests_running{engine="1",model_name="llama"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="llama"} 4.0
vllm:num_requests_waiting{engine="1",model_name="llama"} 1.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="llama"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="llama"} 0.25
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="4",running_lora_adapters="old",waiting_lora_adapters=""} 1.7e9
vllm:lora_requests_info{max_lora="4",running_lora_adapters="sql-lora,chat-lora",waiting_lora_adapters="new-lora"} 1.7000001e9
vllm:lora_requests_info{max_lora="4",running_lora_adapters="older",waiting_lora_adapters=""} 1.6e9
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",num_gpu_blocks="1000"} 1.0
vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="1",num_gpu_blocks="1000"} 1.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="llama"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="llama"} 12.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="llama"} 1.5
vllm:time_to_first_token_seconds_count{engine="0",model_name="llama"} 12.0
vllm:prompt_tokens_total{engine="0",model_name="llama"} 12345 1700000000000
`

const sglangPage = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="llama"} 7
sglang:num_queue_reqs{model_name="llama"} 2
sglang:token_usage{model_name="llama"} 0.75
sglang:gen_throughput{model_name="llama"} 123.4
`

func TestParse(t *testing.T) {
	vllm, sgl := []Names{VLLMNames()}, []Names{SGLangNames()}
	auto, _ := NamesFor(EngineAuto, nil)
	autoEngines := []Engine{EngineVLLM, EngineSGLang}
	custom, _ := NamesFor(EngineVLLM, map[string]string{"waiting": "my:queue"})
	tests := []struct {
		name    string
		body    string
		fams    []Names
		engines []Engine
		want    Sample
		wantErr bool
	}{
		{name: "vllm two engines", body: vllmPage, fams: vllm, engines: []Engine{EngineVLLM}, want: Sample{
			Engine: EngineVLLM, Waiting: 5, Running: 5, KVUsage: 0.375, HasQueue: true, HasKVUsage: true, HasLoRA: true,
			RunningLoRA: []string{"sql-lora", "chat-lora"}, WaitingLoRA: []string{"new-lora"}, MaxLoRA: 4, CapacityTokens: 32000}},
		{name: "sglang", body: sglangPage, fams: sgl, engines: []Engine{EngineSGLang}, want: Sample{
			Engine: EngineSGLang, Waiting: 2, Running: 7, KVUsage: 0.75, HasQueue: true, HasKVUsage: true}},
		{name: "auto finds sglang", body: sglangPage, fams: auto, engines: autoEngines, want: Sample{
			Engine: EngineSGLang, Waiting: 2, Running: 7, KVUsage: 0.75, HasQueue: true, HasKVUsage: true}},
		{name: "auto prefers vllm", body: sglangPage + vllmPage, fams: auto, engines: autoEngines, want: Sample{
			Engine: EngineVLLM, Waiting: 5, Running: 5, KVUsage: 0.375, HasQueue: true, HasKVUsage: true, HasLoRA: true,
			RunningLoRA: []string{"sql-lora", "chat-lora"}, WaitingLoRA: []string{"new-lora"}, MaxLoRA: 4, CapacityTokens: 32000}},
		{name: "override", body: "my:queue 9\nvllm:num_requests_waiting 1\n", fams: custom, engines: []Engine{EngineVLLM},
			want: Sample{Engine: EngineVLLM, Waiting: 9, HasQueue: true}},
		{name: "empty", body: "", fams: vllm},
		{name: "no family", body: "other_metric 1\n# comment\n\n", fams: vllm},
		{name: "NaN skipped", body: "vllm:kv_cache_usage_perc NaN\n", fams: vllm},
		{name: "usage clamped", body: "vllm:kv_cache_usage_perc 1.5\n", fams: vllm, engines: []Engine{EngineVLLM},
			want: Sample{Engine: EngineVLLM, KVUsage: 1, HasKVUsage: true}},
		{name: "escaped label", body: `vllm:lora_requests_info{running_lora_adapters="a\"b,c\\d",max_lora="1"} 5` + "\n", fams: vllm, engines: []Engine{EngineVLLM},
			want: Sample{Engine: EngineVLLM, HasLoRA: true, RunningLoRA: []string{`a"b`, `c\d`}, MaxLoRA: 1}},
		{name: "bad value", body: "vllm:num_requests_waiting abc\n", fams: vllm, wantErr: true},
		{name: "no value", body: "vllm:num_requests_waiting\n", fams: vllm, wantErr: true},
		{name: "unterminated labels", body: `vllm:num_requests_waiting{a="b 1` + "\n", fams: vllm, wantErr: true},
		{name: "bad cache labels", body: `vllm:cache_config_info{block_size=16} 1` + "\n", fams: vllm, wantErr: true},
		{name: "other family malformed is skipped", body: "garbage{{{ line\nvllm:num_requests_running 2\n", fams: vllm, engines: []Engine{EngineVLLM},
			want: Sample{Engine: EngineVLLM, Running: 2, HasQueue: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Sample
			err := Parse([]byte(tt.body), tt.fams, tt.engines, &got)
			if tt.wantErr {
				if !errors.Is(err, ErrParse) {
					t.Fatalf("err = %v, want ErrParse", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameSample(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func sameSample(a, b Sample) bool {
	return a.Engine == b.Engine && a.Waiting == b.Waiting && a.Running == b.Running && a.KVUsage == b.KVUsage &&
		a.HasQueue == b.HasQueue && a.HasKVUsage == b.HasKVUsage && a.HasLoRA == b.HasLoRA && a.MaxLoRA == b.MaxLoRA &&
		a.CapacityTokens == b.CapacityTokens && slices.Equal(a.RunningLoRA, b.RunningLoRA) && slices.Equal(a.WaitingLoRA, b.WaitingLoRA)
}

func TestLoadBlocks(t *testing.T) {
	tests := []struct {
		name     string
		s        Sample
		capacity float64
		want     float64
		ok       bool
	}{
		{"no usage", Sample{HasQueue: true, Running: 2}, 100, 0, false},
		{"no capacity", Sample{HasKVUsage: true, KVUsage: 0.5}, 0, 0, false},
		{"usage only", Sample{HasKVUsage: true, KVUsage: 0.5}, 100, 50, true},
		{"queue scales", Sample{HasKVUsage: true, KVUsage: 0.5, HasQueue: true, Running: 2, Waiting: 2}, 100, 100, true},
		{"nothing running", Sample{HasKVUsage: true, KVUsage: 0, HasQueue: true, Waiting: 3}, 100, 0, true},
	}
	for _, tt := range tests {
		got, ok := tt.s.LoadBlocks(tt.capacity)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: LoadBlocks(%v) = %v, %v; want %v, %v", tt.name, tt.capacity, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNamesFor(t *testing.T) {
	if _, err := NamesFor(EngineVLLM, map[string]string{"bogus": "x"}); !errors.Is(err, ErrNames) {
		t.Fatalf("bogus override: err = %v, want ErrNames", err)
	}
	if _, err := NamesFor("trt", nil); err == nil || !strings.Contains(err.Error(), "trt") {
		t.Fatalf("engine trt: err = %v, want one naming it", err)
	}
	n, err := NamesFor(EngineSGLang, map[string]string{"kv_usage": "x:usage"})
	if err != nil || len(n) != 1 || n[0].KVUsage != "x:usage" || n[0].Running != "sglang:num_running_reqs" {
		t.Fatalf("NamesFor(sglang, kv_usage) = %+v, %v", n, err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := func() error { c := DefaultConfig(); return c.Validate("engine_metrics") }(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		field string
		mod   func(*Config)
	}{
		{"path", func(c *Config) { c.Path = "metrics" }},
		{"interval", func(c *Config) { c.Interval = 0 }},
		{"timeout", func(c *Config) { c.Timeout = -1 }},
		{"stale_after", func(c *Config) { c.StaleAfter = c.Interval / 2 }},
		{"concurrency", func(c *Config) { c.Concurrency = 0 }},
		{"max_body_bytes", func(c *Config) { c.MaxBodyBytes = 10 }},
		{"lora_affinity_weight", func(c *Config) { c.LoRAAffinityWeight = -1 }},
		{"engine", func(c *Config) { c.Engine = "trt" }},
		{"names", func(c *Config) { c.Names = map[string]string{"queue": "x"} }},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.mod(&c)
		err := c.Validate("engine_metrics")
		if err == nil || !strings.Contains(err.Error(), "engine_metrics."+tt.field) && !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: err = %v, want one naming engine_metrics.%s", tt.field, err, tt.field)
		}
	}
}

// realisticPage is a vLLM page of about 100 KB: the four gauges among many
// histogram series, as a busy engine serves it.
func realisticPage() []byte {
	var b strings.Builder
	b.WriteString(vllmPage)
	for h := range 20 {
		fmt.Fprintf(&b, "# HELP vllm:hist_%d_seconds A histogram.\n# TYPE vllm:hist_%d_seconds histogram\n", h, h)
		for le := range 40 {
			fmt.Fprintf(&b, "vllm:hist_%d_seconds_bucket{engine=\"0\",le=\"%g\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} %d\n", h, 0.001*float64(le+1), le*17)
		}
	}
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	page := realisticPage()
	fams, _ := NamesFor(EngineAuto, nil)
	engines := []Engine{EngineVLLM, EngineSGLang}
	var s Sample
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Parse(page, fams, engines, &s); err != nil {
			b.Fatal(err)
		}
	}
}
