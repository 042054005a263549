package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cellrouter/cellrouter/loadtest/replay"
)

// The files WriteDir writes.
const (
	FileJSON     = "report.json"
	FileIndex    = "index.html"
	FileTTFT     = "ttft_cdf.svg"
	FileTimeline = "latency_over_time.svg"
	FilePods     = "pod_load.svg"
)

// WriteDir writes the report of one replay into dir (created if needed):
// report.json (the Summary), the three plots and index.html.
func WriteDir(dir string, s *Summary, results []replay.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %v", err)
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %v", err)
	}
	var ttft []float64
	for i := range results {
		if results[i].OK() {
			ttft = append(ttft, ms(results[i].TTFT))
		}
	}
	files := []struct {
		name, body string
	}{
		{FileJSON, string(data) + "\n"},
		{FileTTFT, CDFPlot("Time to first token", "TTFT (ms)", []Series{{Name: "TTFT", Values: ttft}})},
		{FileTimeline, TimelinePlot("Latency over time", results)},
		{FilePods, PodPlot("Requests per pod", s.Pods)},
	}
	for _, fl := range files {
		if err := os.WriteFile(filepath.Join(dir, fl.name), []byte(fl.body), 0o644); err != nil {
			return fmt.Errorf("report: %v", err)
		}
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, SummaryPage(s)); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, FileIndex), html.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %v", err)
	}
	return nil
}

// SummaryPage returns the index page of one replay: its figures as tables
// and the three plots.
func SummaryPage(s *Summary) *Page {
	p := &Page{Title: "Load test report"}
	if s.Target != "" {
		p.Notes = append(p.Notes, "Target: "+s.Target)
	}
	p.Notes = append(p.Notes, fmt.Sprintf("%d requests, %d ok, %d errors%s; %.1f s, %.2f req/s, %.0f output tokens/s.",
		s.Requests, s.OK, s.Errors, errorText(s), s.ElapsedS, s.RequestsPerS, s.OutputTokensPerS))
	if s.Delayed > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d requests waited for the concurrency cap: the arrival schedule was not kept.", s.Delayed))
	}
	p.Tables = append(p.Tables, Table{
		Caption: "Latency (ms)",
		Header:  Row{"", "p50", "p90", "p99", "mean"},
		Rows: []Row{
			{"time to first token", fmtMs(s.TTFTP50Ms), fmtMs(s.TTFTP90Ms), fmtMs(s.TTFTP99Ms), fmtMs(s.TTFTMeanMs)},
			{"inter-token", fmtMs(s.ITLP50Ms), fmtMs(s.ITLP90Ms), fmtMs(s.ITLP99Ms), ""},
			{"end-to-end", fmtMs(s.E2EP50Ms), fmtMs(s.E2EP90Ms), fmtMs(s.E2EP99Ms), fmtMs(s.E2EMeanMs)},
		},
	}, Table{
		Caption: "Prefix cache",
		Header:  Row{"", "tokens"},
		Rows: []Row{
			{"prompt tokens", fmt.Sprint(s.PromptTokens)},
			{"cached tokens", fmt.Sprint(s.CachedTokens)},
			{"cached-token ratio", fmt.Sprintf("%.1f%%", 100*s.CachedTokenRatio)},
		},
	})
	pods := Table{Caption: fmt.Sprintf("Pods (max share %.1f%%, even %.1f%%)", 100*s.MaxPodShare, 100*s.MeanPodShare),
		Header: Row{"pod", "requests", "share", "cached"}}
	for _, pl := range s.Pods {
		ratio := 0.0
		if pl.PromptTokens > 0 {
			ratio = float64(pl.CachedTokens) / float64(pl.PromptTokens)
		}
		pods.Rows = append(pods.Rows, Row{pl.Pod, fmt.Sprint(pl.Requests), fmt.Sprintf("%.1f%%", 100*pl.Share), fmt.Sprintf("%.1f%%", 100*ratio)})
	}
	p.Tables = append(p.Tables, pods)
	p.Figures = []Figure{
		{FileTTFT, "Cumulative distribution of the time to first token of successful requests."},
		{FileTimeline, "TTFT and end-to-end latency of each request against the time it was sent; failed requests are red crosses."},
		{FilePods, "Successful requests each pod served; the dashed line is an even share."},
	}
	return p
}
