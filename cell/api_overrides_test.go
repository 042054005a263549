package cell

import (
	"math"
	"net/http"
	"strconv"
	"testing"

	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestOverrideHeaders checks the override headers end to end: good values
// route (200), and NaN, Inf, negatives, values past 1e6 and non-numbers
// are refused with a 400 in OpenAI's shape that names the header.
func TestOverrideHeaders(t *testing.T) {
	c := cellWithPods(t, []*fakePod{newFakePod(t, "a")}, nil)
	base := "http://" + c.HTTPAddr()
	cases := []struct {
		header, value string
		want          int
	}{
		{OverlapWeightHeader, "2.5", 200},
		{TemperatureHeader, "0", 200},
		{TemperatureHeader, "1e6", 200},
		{OverlapWeightHeader, "NaN", 400},
		{OverlapWeightHeader, "nan", 400},
		{TemperatureHeader, "NaN", 400},
		{TemperatureHeader, "Inf", 400},
		{TemperatureHeader, "+Inf", 400},
		{TemperatureHeader, "-Infinity", 400},
		{OverlapWeightHeader, "1e309", 400},
		{OverlapWeightHeader, "-1", 400},
		{TemperatureHeader, "1e7", 400},
		{TemperatureHeader, "hot", 400},
	}
	for _, tc := range cases {
		t.Run(tc.header+"="+tc.value, func(t *testing.T) {
			resp, body := completion(t, base, promptTokens(7), false, map[string]string{tc.header: tc.value})
			if resp.StatusCode != tc.want {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, body, tc.want)
			}
			if tc.want == 400 {
				e := servertest.ErrorBody(t, body)
				if e.Param == nil || *e.Param != tc.header {
					t.Errorf("param: got %v, want %q", e.Param, tc.header)
				}
			}
		})
	}
}

// overrideReference is the naive model of parseOverride: every finite
// number ParseFloat reads, from 0 to 1e6, and nothing else.
func overrideReference(v string) (float64, bool) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || x != x || x > 1e6 || x < 0 || x-x != 0 {
		return 0, false
	}
	return x, true
}

// FuzzParseOverrides checks the override header parser against the naive
// model: it accepts exactly its values, and whatever it stores is finite
// and in range.
func FuzzParseOverrides(f *testing.F) {
	for _, s := range []string{"1", "0.5", "NaN", "nan", "Inf", "-Inf", "+inf", "infinity", "1e309", "-0", "0x1p-2", "1_0", "", " 1", "1e6", "1000000.0000001"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, w, temp string) {
		h := http.Header{}
		h.Set(OverlapWeightHeader, w)
		h.Set(TemperatureHeader, temp)
		var o pipeline.Overrides
		err := parseOverrides(h, &o)
		for _, p := range []struct {
			v   string
			got *float64
		}{{h.Get(OverlapWeightHeader), o.OverlapWeight}, {h.Get(TemperatureHeader), o.Temperature}} {
			if p.got != nil && (math.IsNaN(*p.got) || math.IsInf(*p.got, 0) || *p.got < 0 || *p.got > 1e6) {
				t.Fatalf("stored %v for %q", *p.got, p.v)
			}
		}
		for _, v := range []string{h.Get(OverlapWeightHeader), h.Get(TemperatureHeader)} {
			if v == "" {
				continue
			}
			want, ok := overrideReference(v)
			got, gerr := parseOverride(v)
			if ok != (gerr == nil) || (ok && got != want) {
				t.Fatalf("parseOverride(%q) = %v, %v; reference %v, %v", v, got, gerr, want, ok)
			}
			if !ok && err == nil {
				t.Fatalf("parseOverrides accepted %q", v)
			}
		}
	})
}
