package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/replay"
)

func TestPercentile(t *testing.T) {
	v := []float64{10, 20, 30, 40, 50}
	tests := []struct {
		p, want float64
	}{{0, 10}, {50, 30}, {25, 20}, {90, 46}, {100, 50}, {99, 49.6}}
	for _, tt := range tests {
		if got := Percentile(v, tt.p); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Percentile(%v) got %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := Percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("Percentile(empty) got %v, want NaN", got)
	}
}

// results returns n successful requests, request i taking i+1 ms to the
// first token, on pod "pod-<i mod 3>" except every fourth on pod-0, plus
// one timeout and one 5xx.
func results(n int) []replay.Result {
	var out []replay.Result
	for i := 0; i < n; i++ {
		pod := []string{"pod-0", "pod-1", "pod-2"}[i%3]
		if i%4 == 0 {
			pod = "pod-0"
		}
		out = append(out, replay.Result{
			Index: i, Sent: time.Duration(i) * 10 * time.Millisecond,
			TTFT: time.Duration(i+1) * time.Millisecond, E2E: time.Duration(i+11) * time.Millisecond,
			ITL:          []time.Duration{time.Millisecond, 3 * time.Millisecond},
			PromptTokens: 1000, CachedTokens: 250, CompletionTokens: 3, UsageReported: true, Pod: pod, Status: 200,
		})
	}
	out = append(out,
		replay.Result{Index: n, Sent: time.Second, Err: replay.ErrTimeout, Pod: replay.UnknownPod, Detail: "deadline"},
		replay.Result{Index: n + 1, Sent: time.Second, Err: replay.ErrHTTP5xx, Status: 503, Pod: replay.UnknownPod, Delayed: true})
	return out
}

func TestSummarize(t *testing.T) {
	s := Summarize(results(100), 10*time.Second)
	checks := []struct {
		name      string
		got, want float64
	}{
		{"requests", float64(s.Requests), 102},
		{"ok", float64(s.OK), 100},
		{"errors", float64(s.Errors), 2},
		{"timeouts", float64(s.ErrorsByKind["timeout"]), 1},
		{"5xx", float64(s.ErrorsByKind["http_5xx"]), 1},
		{"delayed", float64(s.Delayed), 1},
		{"ttft p50", s.TTFTP50Ms, 50.5},
		{"ttft p99", s.TTFTP99Ms, 99.01},
		{"e2e p50", s.E2EP50Ms, 60.5},
		{"itl p50", s.ITLP50Ms, 2},
		{"itl p90", s.ITLP90Ms, 3},
		{"cached ratio", s.CachedTokenRatio, 0.25},
		{"req/s", s.RequestsPerS, 10},
		{"out tok/s", s.OutputTokensPerS, 30},
		{"mean share", s.MeanPodShare, 1.0 / 3},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-6 {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	// pod-0 gets i%3==0 (34) plus i%4==0 and i%3!=0 (25 - 9 = 16).
	if len(s.Pods) != 3 || s.Pods[0].Pod != "pod-0" || s.Pods[0].Requests != 50 {
		t.Fatalf("got pods %+v, want pod-0 first with 50 requests", s.Pods)
	}
	if math.Abs(s.MaxPodShare-0.5) > 1e-9 {
		t.Errorf("got max share %v, want 0.5", s.MaxPodShare)
	}
	s.AddIdlePods([]string{"pod-0", "pod-3"})
	if len(s.Pods) != 4 || s.Pods[3].Pod != "pod-3" || s.MeanPodShare != 0.25 {
		t.Errorf("after AddIdlePods got %d pods, mean share %v, want 4 and 0.25", len(s.Pods), s.MeanPodShare)
	}
}

// TestSummarizeFromArrival checks the TTFT from arrival: equal to TTFT
// while the schedule is kept, and the cap's delay added to the delayed
// requests' only (a delayed request that was sent at once, or whose send
// time is before its schedule, counts as sent on time).
func TestSummarizeFromArrival(t *testing.T) {
	rs := results(100)
	s := Summarize(rs, 10*time.Second)
	if s.TTFTFromArrivalP50Ms != s.TTFTP50Ms || s.TTFTFromArrivalP90Ms != s.TTFTP90Ms || s.TTFTFromArrivalP99Ms != s.TTFTP99Ms {
		t.Fatalf("schedule kept: from arrival %v/%v/%v, want TTFT's %v/%v/%v", s.TTFTFromArrivalP50Ms, s.TTFTFromArrivalP90Ms,
			s.TTFTFromArrivalP99Ms, s.TTFTP50Ms, s.TTFTP90Ms, s.TTFTP99Ms)
	}
	var want []float64
	for i := range rs[:100] {
		r := &rs[i]
		r.Scheduled = r.Sent
		switch {
		case i >= 60: // the cap held the last 40 back 200 ms each
			r.Delayed, r.Scheduled = true, r.Sent-200*time.Millisecond
		case i == 10: // sent early: no delay to count
			r.Delayed, r.Scheduled = true, r.Sent+5*time.Millisecond
		}
		wait := ms(r.TTFT)
		if i >= 60 {
			wait += 200
		}
		want = append(want, wait)
		if got := ms(r.ArrivalTTFT()); got != wait {
			t.Fatalf("request %d: ArrivalTTFT %v ms, want %v", i, got, wait)
		}
	}
	s = Summarize(rs, 10*time.Second)
	d := distOf(want)
	if s.TTFTFromArrivalP50Ms != d.P50 || s.TTFTFromArrivalP90Ms != d.P90 || s.TTFTFromArrivalP99Ms != d.P99 {
		t.Errorf("from arrival %v/%v/%v, want %v/%v/%v", s.TTFTFromArrivalP50Ms, s.TTFTFromArrivalP90Ms, s.TTFTFromArrivalP99Ms, d.P50, d.P90, d.P99)
	}
	if s.TTFTP90Ms >= s.TTFTFromArrivalP90Ms || s.TTFTP50Ms != 50.5 {
		t.Errorf("TTFT from send p50 %v, p90 %v (from arrival %v): want unchanged by the schedule", s.TTFTP50Ms, s.TTFTP90Ms, s.TTFTFromArrivalP90Ms)
	}
}

func TestSummarizeEmpty(t *testing.T) {
	s := Summarize(nil, 0)
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("an empty summary does not marshal: %v", err)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, &s); err != nil {
		t.Fatal(err)
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		lo, hi      float64
		first, last float64
	}{{0, 97, 0, 100}, {0, 1, 0, 1}, {0, 2791, 0, 3000}, {0, 0.37, 0, 0.4}}
	for _, tt := range tests {
		got := niceTicks(tt.lo, tt.hi, 6)
		if got[0] != tt.first || math.Abs(got[len(got)-1]-tt.last) > 1e-9 || len(got) < 3 || len(got) > 12 {
			t.Errorf("niceTicks(%v, %v) got %v, want %v..%v in 3..12 steps", tt.lo, tt.hi, got, tt.first, tt.last)
		}
	}
	if got := (axis{}).tickLabel(0.1 * 3); got != "0.3" {
		t.Errorf("tick label of 3*0.1 got %q, want 0.3", got)
	}
}

// element counts the elements of an XML document by name and fails the
// test when it is not well-formed.
func elements(t *testing.T, doc string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	dec := xml.NewDecoder(strings.NewReader(doc))
	dec.Strict = true
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return counts
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
}

func TestPlotsAreValidSVG(t *testing.T) {
	res := results(60)
	s := Summarize(res, time.Second)
	var ttft []float64
	for _, r := range res {
		if r.OK() {
			ttft = append(ttft, ms(r.TTFT))
		}
	}
	tests := []struct {
		name string
		svg  string
		want map[string]int // at least this many of each element
	}{
		{"cdf", CDFPlot("TTFT <&>", "ms", []Series{{"a", ttft}}), map[string]int{"svg": 1, "title": 1, "polyline": 1, "line": 8, "text": 10}},
		{"cdf overlay", CDFPlot("TTFT", "ms", []Series{{"a", ttft}, {"b", nil}, {"c", []float64{5}}}), map[string]int{"polyline": 2}},
		{"cdf empty", CDFPlot("TTFT", "ms", nil), map[string]int{"svg": 1}},
		{"timeline", TimelinePlot("Latency", res), map[string]int{"circle": 2*60 + 3, "line": 8}},
		{"timeline empty", TimelinePlot("Latency", nil), map[string]int{"svg": 1}},
		{"pods", PodPlot("Pods", s.Pods), map[string]int{"rect": 1 + 3 + 1}},
		{"pods empty", PodPlot("Pods", nil), map[string]int{"svg": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := elements(t, tt.svg)
			for el, n := range tt.want {
				if got[el] < n {
					t.Errorf("got %d <%s>, want at least %d", got[el], el, n)
				}
			}
			if strings.Contains(tt.svg, "NaN") || strings.Contains(tt.svg, "Inf") {
				t.Errorf("got NaN or Inf in the SVG")
			}
		})
	}
	// Two failures in the timeline are drawn as crosses and named in the legend.
	if tl := TimelinePlot("Latency", res); !strings.Contains(tl, "failed request (2)") {
		t.Errorf("timeline lacks the failed-request legend entry")
	}
}

func TestWriteDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	res := results(30)
	s := Summarize(res, time.Second)
	s.Target = "http://127.0.0.1:1"
	if err := WriteDir(dir, &s, res); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, FileIndex))
	if err != nil {
		t.Fatal(err)
	}
	els := elements(t, string(html))
	if els["img"] != 3 || els["table"] != 3 || els["h1"] != 1 {
		t.Errorf("index.html got %d img, %d table, %d h1, want 3, 3, 1", els["img"], els["table"], els["h1"])
	}
	for _, f := range []string{FileTTFT, FileTimeline, FilePods} {
		if !strings.Contains(string(html), `src="`+f+`"`) {
			t.Errorf("index.html does not show %s", f)
		}
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if els := elements(t, string(data)); els["svg"] != 1 {
			t.Errorf("%s got %d svg roots, want 1", f, els["svg"])
		}
	}
	var back Summary
	data, err := os.ReadFile(filepath.Join(dir, FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &back); err != nil || back.OK != 30 || back.Target != s.Target {
		t.Errorf("report.json got %+v (%v), want 30 ok and the target", back, err)
	}
}

func TestWriteText(t *testing.T) {
	s := Summarize(results(10), time.Second)
	var buf bytes.Buffer
	if err := WriteText(&buf, &s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"12 sent, 10 ok, 2 errors (http_5xx 1, timeout 1)", "TTFT", "cached tokens", "pod-0", "1 requests waited", "first timeout", "deadline"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("got\n%s\nwant it to contain %q", buf.String(), want)
		}
	}
}

func BenchmarkSummarize(b *testing.B) {
	res := results(10000)
	b.ReportAllocs()
	for b.Loop() {
		Summarize(res, time.Second)
	}
}

func TestLogAxis(t *testing.T) {
	a := newLogAxis(3, 2800, 0, 100, "ms")
	if a.lo > 3 || a.hi < 2800 || a.px(a.lo) != 0 || a.px(a.hi) != 100 {
		t.Fatalf("got axis %v..%v, want it to cover 3..2800 on 0..100 px", a.lo, a.hi)
	}
	if got := a.px(a.lo * 10); math.Abs(got-a.px(a.lo*100)+got-a.px(a.lo)) > 1e-9 {
		t.Errorf("got decade steps of unequal width")
	}
	for i := 1; i < len(a.ticks); i++ {
		if a.ticks[i] <= a.ticks[i-1] {
			t.Errorf("got ticks %v, want increasing", a.ticks)
		}
	}
	wide := CDFPlot("TTFT", "ms", []Series{{"a", []float64{1, 2, 5, 10, 100, 1000, 5000}}})
	if !strings.Contains(wide, "log scale") {
		t.Errorf("a CDF over four decades got a linear axis, want a log one")
	}
	elements(t, wide)
}
