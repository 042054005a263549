package enginemetrics

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// randomPage renders a vLLM page of random engines, adapters and filler
// families, as an engine (or a proxy in front of one) might serve it.
func randomPage(r *rand.Rand) string {
	var b strings.Builder
	engines := 1 + r.IntN(4)
	adapter := func() string {
		names := []string{"sql", "chat-lora", `we"ird`, `back\slash`, "a b"}
		var out []string
		for range r.IntN(3) {
			out = append(out, names[r.IntN(len(names))])
		}
		return strings.Join(out, ",")
	}
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	gauge := func(name string, v func() float64) {
		fmt.Fprintf(&b, "# HELP %s help text\n# TYPE %s gauge\n", name, name)
		for e := range engines {
			fmt.Fprintf(&b, "%s{engine=\"%d\",model_name=\"m\"} %s\n", name, e, strconv.FormatFloat(v(), 'g', -1, 64))
		}
	}
	gauge("vllm:num_requests_waiting", func() float64 { return float64(r.IntN(50)) })
	fmt.Fprintf(&b, "# TYPE filler_total counter\nfiller_total{x=\"}\"} 3\n")
	gauge("vllm:num_requests_running", func() float64 { return float64(r.IntN(50)) })
	gauge("vllm:kv_cache_usage_perc", func() float64 { return r.Float64() })
	fmt.Fprintf(&b, "# TYPE vllm:lora_requests_info gauge\n")
	for i := range r.IntN(4) {
		fmt.Fprintf(&b, "vllm:lora_requests_info{max_lora=\"%d\",running_lora_adapters=\"%s\",waiting_lora_adapters=\"%s\",i=\"%d\"} %d\n",
			1+r.IntN(8), esc.Replace(adapter()), esc.Replace(adapter()), i, 1_700_000_000+r.IntN(1000))
	}
	fmt.Fprintf(&b, "# TYPE vllm:cache_config_info gauge\n")
	for e := range engines {
		fmt.Fprintf(&b, "vllm:cache_config_info{block_size=\"%d\",engine=\"%d\",num_gpu_blocks=\"%d\"} 1\n", 16<<r.IntN(2), e, 100+r.IntN(5000))
	}
	return b.String()
}

// naiveSample computes the Sample of a page from the reference parser's
// metric families, the obvious way.
func naiveSample(t *testing.T, page string) Sample {
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatalf("reference parser: %v\n%s", err, page)
	}
	label := func(m *dto.Metric, k string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == k {
				return l.GetValue()
			}
		}
		return ""
	}
	s := Sample{Engine: EngineVLLM, HasQueue: true, HasKVUsage: true}
	for _, m := range mfs["vllm:num_requests_waiting"].GetMetric() {
		s.Waiting += m.GetGauge().GetValue()
	}
	for _, m := range mfs["vllm:num_requests_running"].GetMetric() {
		s.Running += m.GetGauge().GetValue()
	}
	var kv []float64
	for _, m := range mfs["vllm:kv_cache_usage_perc"].GetMetric() {
		kv = append(kv, m.GetGauge().GetValue())
	}
	sum := 0.0
	for _, v := range kv {
		sum += v
	}
	s.KVUsage = sum / float64(len(kv))
	newest := -math.MaxFloat64
	for _, m := range mfs["vllm:lora_requests_info"].GetMetric() {
		if v := m.GetGauge().GetValue(); v >= newest {
			newest = v
			s.HasLoRA = true
			s.RunningLoRA = splitList([]byte(label(m, "running_lora_adapters")), nil)
			s.WaitingLoRA = splitList([]byte(label(m, "waiting_lora_adapters")), nil)
			s.MaxLoRA, _ = strconv.Atoi(label(m, "max_lora"))
		}
	}
	for _, m := range mfs["vllm:cache_config_info"].GetMetric() {
		bs, _ := strconv.ParseInt(label(m, "block_size"), 10, 64)
		n, _ := strconv.ParseInt(label(m, "num_gpu_blocks"), 10, 64)
		s.CapacityTokens += bs * n
	}
	return s
}

// TestParseMatchesReference checks Parse against a general text-format
// parser (prometheus/common/expfmt) on random pages.
func TestParseMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 42))
	fams, _ := NamesFor(EngineAuto, nil)
	for i := range 500 {
		page := randomPage(r)
		want := naiveSample(t, page)
		var got Sample
		if err := Parse([]byte(page), fams, []Engine{EngineVLLM, EngineSGLang}, &got); err != nil {
			t.Fatalf("page %d: %v\n%s", i, err, page)
		}
		if math.Abs(got.KVUsage-want.KVUsage) < 1e-12 {
			got.KVUsage = want.KVUsage
		}
		if !sameSample(got, want) {
			t.Fatalf("page %d:\ngot  %+v\nwant %+v\n%s", i, got, want, page)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(vllmPage))
	f.Add([]byte(sglangPage))
	f.Add([]byte(randomPage(rand.New(rand.NewPCG(1, 2)))))
	f.Add([]byte("vllm:lora_requests_info{running_lora_adapters=\"a\\\"\",max_lora=\"x\"} 1e9 123\n"))
	f.Add([]byte("vllm:cache_config_info{block_size=\"9223372036854775807\",num_gpu_blocks=\"9223372036854775807\"} 1\nvllm:cache_config_info{block_size=\"2\",num_gpu_blocks=\"4611686018427387904\"} 1\n"))
	f.Add([]byte("vllm:num_requests_waiting{a=\"\\"))
	f.Add([]byte("  vllm:num_requests_running\t-3\n"))
	fams, _ := NamesFor(EngineAuto, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		var s Sample
		err := Parse(body, fams, []Engine{EngineVLLM, EngineSGLang}, &s)
		if !bytes.Equal(orig, body) {
			t.Fatal("Parse modified its input")
		}
		if err != nil {
			return
		}
		if s.Waiting < 0 || s.Running < 0 || math.IsNaN(s.Waiting) || math.IsNaN(s.Running) {
			t.Fatalf("counts %v, %v: want >= 0", s.Waiting, s.Running)
		}
		if s.KVUsage < 0 || s.KVUsage > 1 || math.IsNaN(s.KVUsage) {
			t.Fatalf("usage %v: want in [0, 1]", s.KVUsage)
		}
		if s.CapacityTokens < 0 {
			t.Fatalf("capacity %d: want >= 0", s.CapacityTokens)
		}
		if _, ok := s.LoadBlocks(1000); ok && s.Running > 0 {
			if v, _ := s.LoadBlocks(1000); v < 0 || math.IsNaN(v) {
				t.Fatalf("LoadBlocks = %v", v)
			}
		}
	})
}
