package report

import (
	"sort"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/replay"
)

// PodLoad is the load one pod served.
type PodLoad struct {
	// Pod is the pod's name as its response header gave it.
	Pod string `json:"pod"`
	// Requests counts its successful requests; Share is their fraction of
	// all successful requests.
	Requests int     `json:"requests"`
	Share    float64 `json:"share"`
	// PromptTokens and CachedTokens are its requests' sums.
	PromptTokens int64 `json:"prompt_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
}

// Summary is a replay's figures. Latencies are in milliseconds.
type Summary struct {
	Target string `json:"target,omitempty"`
	// Requests counts all records; OK the successful ones; Errors the rest,
	// by kind; Delayed those the concurrency cap held back.
	Requests     int            `json:"requests"`
	OK           int            `json:"ok"`
	Errors       int            `json:"errors"`
	ErrorsByKind map[string]int `json:"errors_by_kind"`
	// ErrorExamples holds the first failure's detail of each kind.
	ErrorExamples map[string]string `json:"error_examples,omitempty"`
	Delayed       int               `json:"delayed"`
	// ElapsedS is the wall time of the replay in seconds.
	ElapsedS float64 `json:"elapsed_s"`
	// RequestsPerS and OutputTokensPerS are successful requests and their
	// completion tokens per second of wall time.
	RequestsPerS     float64 `json:"requests_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`

	TTFTP50Ms  float64 `json:"ttft_p50_ms"`
	TTFTP90Ms  float64 `json:"ttft_p90_ms"`
	TTFTP99Ms  float64 `json:"ttft_p99_ms"`
	TTFTMeanMs float64 `json:"ttft_mean_ms"`
	ITLP50Ms   float64 `json:"itl_p50_ms"`
	ITLP90Ms   float64 `json:"itl_p90_ms"`
	ITLP99Ms   float64 `json:"itl_p99_ms"`
	E2EP50Ms   float64 `json:"e2e_p50_ms"`
	E2EP90Ms   float64 `json:"e2e_p90_ms"`
	E2EP99Ms   float64 `json:"e2e_p99_ms"`
	E2EMeanMs  float64 `json:"e2e_mean_ms"`

	// TTFTFromArrival* are the TTFT percentiles from each request's
	// scheduled arrival rather than its send (replay.Result.ArrivalTTFT):
	// equal to TTFT* when the schedule was kept (Delayed 0), above them by
	// the time the concurrency cap held requests back otherwise.
	TTFTFromArrivalP50Ms float64 `json:"ttft_from_arrival_p50_ms"`
	TTFTFromArrivalP90Ms float64 `json:"ttft_from_arrival_p90_ms"`
	TTFTFromArrivalP99Ms float64 `json:"ttft_from_arrival_p99_ms"`

	// PromptTokens, CachedTokens and OutputTokens sum the successful
	// requests' usage; CachedTokenRatio = CachedTokens / PromptTokens.
	PromptTokens     int64   `json:"prompt_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CachedTokenRatio float64 `json:"cached_token_ratio"`
	// UsageMissing counts successful responses without usage.
	UsageMissing int `json:"usage_missing"`

	// Pods lists the serving pods by name; MaxPodShare is the largest
	// share, MeanPodShare one over the number of pods.
	Pods         []PodLoad `json:"pods"`
	MaxPodShare  float64   `json:"max_pod_share"`
	MeanPodShare float64   `json:"mean_pod_share"`
}

// Summarize computes the figures of results, a replay that took elapsed.
func Summarize(results []replay.Result, elapsed time.Duration) Summary {
	s := Summary{Requests: len(results), ElapsedS: elapsed.Seconds(), ErrorsByKind: map[string]int{}}
	var ttft, arrival, itl, e2e []float64
	pods := map[string]*PodLoad{}
	for i := range results {
		r := &results[i]
		if r.Delayed {
			s.Delayed++
		}
		if !r.OK() {
			s.Errors++
			s.ErrorsByKind[string(r.Err)]++
			if _, ok := s.ErrorExamples[string(r.Err)]; !ok {
				if s.ErrorExamples == nil {
					s.ErrorExamples = map[string]string{}
				}
				s.ErrorExamples[string(r.Err)] = truncate(r.Detail, 300)
			}
			continue
		}
		s.OK++
		ttft = append(ttft, ms(r.TTFT))
		arrival = append(arrival, ms(r.ArrivalTTFT()))
		e2e = append(e2e, ms(r.E2E))
		for _, g := range r.ITL {
			itl = append(itl, ms(g))
		}
		if !r.UsageReported {
			s.UsageMissing++
		}
		s.PromptTokens += int64(r.PromptTokens)
		s.CachedTokens += int64(r.CachedTokens)
		s.OutputTokens += int64(r.CompletionTokens)
		p := pods[r.Pod]
		if p == nil {
			p = &PodLoad{Pod: r.Pod}
			pods[r.Pod] = p
		}
		p.Requests++
		p.PromptTokens += int64(r.PromptTokens)
		p.CachedTokens += int64(r.CachedTokens)
	}
	if sec := elapsed.Seconds(); sec > 0 {
		s.RequestsPerS = float64(s.OK) / sec
		s.OutputTokensPerS = float64(s.OutputTokens) / sec
	}
	if s.PromptTokens > 0 {
		s.CachedTokenRatio = float64(s.CachedTokens) / float64(s.PromptTokens)
	}
	t, it, e := distOf(ttft), distOf(itl), distOf(e2e)
	s.TTFTP50Ms, s.TTFTP90Ms, s.TTFTP99Ms, s.TTFTMeanMs = t.P50, t.P90, t.P99, t.Mean
	a := distOf(arrival)
	s.TTFTFromArrivalP50Ms, s.TTFTFromArrivalP90Ms, s.TTFTFromArrivalP99Ms = a.P50, a.P90, a.P99
	s.ITLP50Ms, s.ITLP90Ms, s.ITLP99Ms = it.P50, it.P90, it.P99
	s.E2EP50Ms, s.E2EP90Ms, s.E2EP99Ms, s.E2EMeanMs = e.P50, e.P90, e.P99, e.Mean
	s.Pods = make([]PodLoad, 0, len(pods))
	for _, p := range pods {
		p.Share = float64(p.Requests) / float64(s.OK)
		s.Pods = append(s.Pods, *p)
		s.MaxPodShare = max(s.MaxPodShare, p.Share)
	}
	sort.Slice(s.Pods, func(i, j int) bool { return s.Pods[i].Pod < s.Pods[j].Pod })
	if len(s.Pods) > 0 {
		s.MeanPodShare = 1 / float64(len(s.Pods))
	}
	return s
}

// ms converts a duration to fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// AddIdlePods lists the named pods that served nothing, so that the mean
// share counts every pod of a known fleet and the bar chart shows idle
// pods too.
func (s *Summary) AddIdlePods(names []string) {
	have := map[string]bool{}
	for _, p := range s.Pods {
		have[p.Pod] = true
	}
	for _, n := range names {
		if !have[n] {
			s.Pods = append(s.Pods, PodLoad{Pod: n})
			have[n] = true
		}
	}
	sort.Slice(s.Pods, func(i, j int) bool { return s.Pods[i].Pod < s.Pods[j].Pod })
	if len(s.Pods) > 0 {
		s.MeanPodShare = 1 / float64(len(s.Pods))
	}
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
