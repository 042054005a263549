package failover

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWindowStats checks the per-window bookkeeping: only records sent in
// the window count, failures and cuts are told apart, and the cached
// ratio is over the complete requests.
func TestWindowStats(t *testing.T) {
	s := time.Second
	recs := []record{
		{Sent: 0, Prompt: 100, Cached: 100},
		{Sent: 10 * s, Prompt: 100, Cached: 50},
		{Sent: 11 * s, FailedBeforeFirstByte: true},
		{Sent: 12 * s, Cut: true, Prompt: 100},
		{Sent: 13 * s, Prompt: 300, Cached: 0},
		{Sent: 20 * s, Prompt: 100, Cached: 100},
	}
	n, failed, cut, ratio := windowStats(recs, 10*s, 20*s)
	if n != 4 || failed != 1 || cut != 1 || ratio != 50.0/400 {
		t.Fatalf("windowStats = %d, %d, %d, %v; want 4, 1, 1, 0.125", n, failed, cut, ratio)
	}
	if n, _, _, ratio := windowStats(recs, 30*s, 40*s); n != 0 || ratio != 0 {
		t.Fatalf("an empty window: %d requests, ratio %v", n, ratio)
	}
}

// TestBuildReport checks the rows: windows at the faults' offsets in both
// runs, detection and readiness from the injection's times, -1 when a
// time is missing.
func TestBuildReport(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Warmup, cfg.Window, cfg.Gap = 10*time.Second, 5*time.Second, time.Second
	cfg.Faults = []string{FaultKillCellReplica, FaultKillPod}
	s := time.Second
	t0 := time.Unix(1000, 0)
	faulty := &run{
		records: []record{
			{Sent: 1 * s, FailedBeforeFirstByte: true},
			{Sent: 11 * s, Prompt: 100, Cached: 40},
			{Sent: 15*s + 500*time.Millisecond, Cut: true},
			{Sent: 17 * s, Prompt: 100, Cached: 10},
		},
		faults: []injection{
			{fault: FaultKillCellReplica, target: "cell-0/r0", offset: 10 * s, at: t0, detected: t0.Add(800 * time.Millisecond),
				restarted: t0.Add(3 * s), ready: t0.Add(3*s + 500*time.Millisecond)},
			{fault: FaultKillPod, target: "c1-p1-0", offset: 16 * s, at: t0.Add(6 * s)},
		},
	}
	base := &run{records: []record{{Sent: 12 * s, Prompt: 100, Cached: 50}, {Sent: 18 * s, Prompt: 100, Cached: 20}}}
	rep := buildReport(cfg, base, faulty)
	if rep.WarmupFailures != 1 || len(rep.Faults) != 2 {
		t.Fatalf("report = %+v, want 1 warm-up failure and 2 rows", rep)
	}
	r0 := rep.Faults[0]
	if r0.Requests != 2 || r0.CutStreams != 1 || r0.FailedBeforeFirstByte != 0 || r0.CachedRatio != 0.4 || r0.CachedRatioBaseline != 0.5 ||
		r0.DetectS != 0.8 || r0.ReadyS != 0.5 || r0.AtS != 10 {
		t.Fatalf("row 0 = %+v", r0)
	}
	r1 := rep.Faults[1]
	if r1.Requests != 1 || r1.CachedRatio != 0.1 || r1.CachedRatioBaseline != 0.2 || r1.DetectS != -1 || r1.ReadyS != -1 {
		t.Fatalf("row 1 = %+v", r1)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "kill-cell-replica") {
		t.Fatalf("table: %v\n%s", err, buf.String())
	}
}

// TestBalancerOrder checks the balancer's turns and that a down endpoint
// is skipped until it is taken back.
func TestBalancerOrder(t *testing.T) {
	b := newBalancer([]string{"a", "b", "c"})
	first := b.order()
	second := b.order()
	if len(first) != 3 || first[0] == second[0] {
		t.Fatalf("orders %v then %v, want all three in turns", first, second)
	}
	b.setUp(1, false)
	for range 3 {
		for _, i := range b.order() {
			if i == 1 {
				t.Fatalf("a down endpoint was offered")
			}
		}
	}
	if down, _ := b.stateSince(1); down.IsZero() {
		t.Fatalf("no time recorded for the endpoint going down")
	}
	b.setUp(1, true)
	if len(b.order()) != 3 {
		t.Fatalf("the endpoint taken back is not offered")
	}
}

func response(status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Body: io.NopCloser(strings.NewReader(body))}
}

// TestReadAnswer checks how an answer is classified and its usage read.
func TestReadAnswer(t *testing.T) {
	ok := "data: {\"choices\":[{\"text\":\"a\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":64,\"prompt_tokens_details\":{\"cached_tokens\":48}}}\n\ndata: [DONE]\n\n"
	if r := readAnswer(response(200, ok), time.Now()); r.FailedBeforeFirstByte || r.Cut || r.Prompt != 64 || r.Cached != 48 {
		t.Fatalf("complete stream: %+v", r)
	}
	if r := readAnswer(response(200, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"), time.Now()); !r.Cut {
		t.Fatalf("stream without [DONE]: %+v, want cut", r)
	}
	if r := readAnswer(response(503, `{"error":{}}`), time.Now()); !r.FailedBeforeFirstByte || r.Cut {
		t.Fatalf("503: %+v, want failed before the first byte", r)
	}
}

// TestReadAnswerTimes checks the first-byte wait and the longest gap of a
// stream whose events arrive slowly, and an error event that ends one.
func TestReadAnswerTimes(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		time.Sleep(50 * time.Millisecond)
		io.WriteString(pw, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		time.Sleep(120 * time.Millisecond)
		io.WriteString(pw, "data: {\"error\":{\"message\":\"stalled\",\"type\":\"server_error\",\"param\":null,\"code\":\"upstream_stalled\"}}\n\n")
		pw.Close()
	}()
	r := readAnswer(&http.Response{StatusCode: 200, Body: pr}, time.Now())
	if r.FirstByte < 50*time.Millisecond || r.MaxGap < 120*time.Millisecond || !r.ErrorEvent || !r.Cut {
		t.Fatalf("record %+v: want first byte >= 50ms, gap >= 120ms, an error event, cut", r)
	}
}

// TestStreamStats checks the window's longest first byte and stalled
// streams.
func TestStreamStats(t *testing.T) {
	s := time.Second
	recs := []record{
		{Sent: 0, FirstByte: 9 * s},
		{Sent: 10 * s, FirstByte: 300 * time.Millisecond},
		{Sent: 11 * s, FirstByte: 2500 * time.Millisecond, MaxGap: 100 * time.Millisecond},
		{Sent: 12 * s, FirstByte: 100 * time.Millisecond, MaxGap: 3 * s},
		{Sent: 13 * s, FirstByte: 100 * time.Millisecond, ErrorEvent: true, Cut: true},
		{Sent: 20 * s, FirstByte: 8 * s, MaxGap: 8 * s},
	}
	maxFirst, stalled, errs := streamStats(recs, 10*s, 20*s, 2*s)
	if maxFirst != 2500*time.Millisecond || stalled != 2 || errs != 1 {
		t.Fatalf("streamStats = %v, %d, %d; want 2.5s, 2, 1", maxFirst, stalled, errs)
	}
}

func TestSample(t *testing.T) {
	text := "# HELP x\ncellrouter_global_cell_endpoints{cell=\"cell-0\"} 2\ncellrouter_global_cell_endpoints{cell=\"cell-10\"} 1\n"
	if got := sample(text, `cellrouter_global_cell_endpoints{cell="cell-0"}`); got != 2 {
		t.Fatalf("sample = %v, want 2", got)
	}
	if got := sample(text, `cellrouter_global_cell_endpoints{cell="cell-1"}`); got != -1 {
		t.Fatalf("missing sample = %v, want -1", got)
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.Trace = "t.jsonl"
	if err := good.Validate(); err != nil {
		t.Fatalf("default config with a trace: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"no trace", func(c *Config) { c.Trace = "" }},
		{"one replica", func(c *Config) { c.ReplicasPerCell = 1 }},
		{"one globald", func(c *Config) { c.Globals = 1 }},
		{"restart after the window", func(c *Config) { c.RestartAfter = c.Window }},
		{"unknown fault", func(c *Config) { c.Faults = []string{"kill-everything"} }},
		{"probe timeout above interval", func(c *Config) { c.ProbeTimeout = c.ProbeInterval }},
		{"freeze past the window", func(c *Config) { c.FreezeFor = c.Window }},
		{"no stall gap", func(c *Config) { c.StallGap = 0 }},
		{"no flood", func(c *Config) { c.FloodBlocks = 0 }},
	} {
		c := good
		tc.mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate = nil, want an error", tc.name)
		}
	}
	if got, want := good.Duration(), good.Warmup+time.Duration(len(AllFaults))*(good.Window+good.Gap); got != want {
		t.Fatalf("Duration = %v, want %v", got, want)
	}
}
