package compare

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/replay"
)

// requestsHeader names the columns of a mode's per-request CSV.
var requestsHeader = []string{
	"index", "scheduled_ms", "sent_ms", "delayed", "ttft_ms", "ttft_from_arrival_ms", "e2e_ms",
	"prompt_tokens", "cached_tokens", "completion_tokens", "pod", "status", "error",
}

// writeRequestsCSV writes one row per replayed request, in trace order:
// what it waited and where it went, for analyses the summary does not
// make (which requests make a tail, on which pods).
func writeRequestsCSV(w io.Writer, results []replay.Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(requestsHeader); err != nil {
		return err
	}
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64)
	}
	for i := range results {
		r := &results[i]
		row := []string{
			strconv.Itoa(r.Index), ms(r.Scheduled), ms(r.Sent), strconv.FormatBool(r.Delayed),
			ms(r.TTFT), ms(r.ArrivalTTFT()), ms(r.E2E),
			strconv.Itoa(r.PromptTokens), strconv.Itoa(r.CachedTokens), strconv.Itoa(r.CompletionTokens),
			r.Pod, strconv.Itoa(r.Status), string(r.Err),
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("compare: requests csv: %v", err)
	}
	return nil
}
