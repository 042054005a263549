package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cellrouter/cellrouter/loadtest/replay"
)

// WriteText writes s as a readable table.
func WriteText(w io.Writer, s *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if s.Target != "" {
		fmt.Fprintf(tw, "target\t%s\n", s.Target)
	}
	fmt.Fprintf(tw, "requests\t%d sent, %d ok, %d errors%s\n", s.Requests, s.OK, s.Errors, errorText(s))
	for _, k := range replay.ErrorKinds {
		if d, ok := s.ErrorExamples[string(k)]; ok {
			fmt.Fprintf(tw, "  first %s\t%s\n", k, d)
		}
	}
	if s.Delayed > 0 {
		fmt.Fprintf(tw, "delayed\t%d requests waited for the concurrency cap (the schedule was not kept)\n", s.Delayed)
	}
	fmt.Fprintf(tw, "elapsed\t%.1f s, %.2f req/s, %.0f output tokens/s\n", s.ElapsedS, s.RequestsPerS, s.OutputTokensPerS)
	fmt.Fprintln(tw, "\t\tp50\tp90\tp99\tmean")
	fmt.Fprintf(tw, "TTFT\tms\t%.1f\t%.1f\t%.1f\t%.1f\n", s.TTFTP50Ms, s.TTFTP90Ms, s.TTFTP99Ms, s.TTFTMeanMs)
	fmt.Fprintf(tw, "inter-token\tms\t%.2f\t%.2f\t%.2f\t\n", s.ITLP50Ms, s.ITLP90Ms, s.ITLP99Ms)
	fmt.Fprintf(tw, "end-to-end\tms\t%.1f\t%.1f\t%.1f\t%.1f\n", s.E2EP50Ms, s.E2EP90Ms, s.E2EP99Ms, s.E2EMeanMs)
	fmt.Fprintf(tw, "cached tokens\t%d of %d prompt tokens (%.1f%%)\n", s.CachedTokens, s.PromptTokens, 100*s.CachedTokenRatio)
	if s.UsageMissing > 0 {
		fmt.Fprintf(tw, "usage missing\t%d responses carried no usage\n", s.UsageMissing)
	}
	if len(s.Pods) > 0 {
		fmt.Fprintf(tw, "pods\t%d, max share %.1f%% (even: %.1f%%)\n", len(s.Pods), 100*s.MaxPodShare, 100*s.MeanPodShare)
		for _, p := range s.Pods {
			ratio := 0.0
			if p.PromptTokens > 0 {
				ratio = float64(p.CachedTokens) / float64(p.PromptTokens)
			}
			fmt.Fprintf(tw, "  %s\t%d requests\t%.1f%%\tcached %.1f%%\n", p.Pod, p.Requests, 100*p.Share, 100*ratio)
		}
	}
	return tw.Flush()
}

// errorText lists the error kinds that occurred, in report order.
func errorText(s *Summary) string {
	var parts []string
	for _, k := range replay.ErrorKinds {
		if n := s.ErrorsByKind[string(k)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
