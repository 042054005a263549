package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cellrouter/cellrouter/loadtest/replay"
)

// Series is one named set of values for a distribution plot.
type Series struct {
	Name   string
	Values []float64
}

// cdfPoints is the most vertices one CDF polyline gets.
const cdfPoints = 600

// CDFPlot draws the cumulative distributions of series (values in ms) on one
// plot. The x axis ends at the largest 99.9th percentile, so one outlier
// does not squash the rest; a note says when values lie beyond it. When the
// values span more than two decades the x axis is logarithmic. With a
// single series, dashed lines mark its p50, p90 and p99.
func CDFPlot(title, xLabel string, series []Series) string {
	c := newCanvas(title)
	hi, top, low := 0.0, 0.0, math.Inf(1)
	sorted := make([][]float64, len(series))
	for i, s := range series {
		v := append([]float64(nil), s.Values...)
		sort.Float64s(v)
		sorted[i] = v
		if len(v) > 0 {
			hi = math.Max(hi, Percentile(v, 99.9))
			top = math.Max(top, v[len(v)-1])
			low = math.Min(low, Percentile(v, 1))
		}
	}
	x := newAxis(0, hi, marginL, marginL+innerW, xLabel)
	if low > 0 && hi/low > 100 {
		x = newLogAxis(low, hi, marginL, marginL+innerW, xLabel+", log scale")
	}
	y := newAxis(0, 1, marginT+innerH, marginT, "fraction of requests")
	y.unitFrac = true
	c.frame(x, y)
	var items []legendItem
	for i, v := range sorted {
		color := Palette[i%len(Palette)]
		if len(v) == 0 {
			items = append(items, legendItem{color: color, label: series[i].Name + " (no data)"})
			continue
		}
		var pts strings.Builder
		n := len(v)
		steps := min(n, cdfPoints)
		for k := 0; k <= steps; k++ {
			q := float64(k) / float64(steps)
			val := Percentile(v, 100*q)
			fmt.Fprintf(&pts, "%s,%s ", f(x.px(val)), f(y.px(q)))
		}
		fmt.Fprintf(&c.b, `<polyline fill="none" stroke="%s" stroke-width="2.2" points="%s"/>`+"\n", color, strings.TrimSpace(pts.String()))
		items = append(items, legendItem{color: color, label: fmt.Sprintf("%s: p50 %s, p99 %s ms (n=%d)",
			series[i].Name, fmtMs(Percentile(v, 50)), fmtMs(Percentile(v, 99)), n)})
	}
	if len(sorted) == 1 && len(sorted[0]) > 0 {
		for _, p := range []float64{50, 90, 99} {
			px := x.px(Percentile(sorted[0], p))
			c.line(px, marginT, px, marginT+innerH, "#555", 1, "4,3")
			c.text(px+3, marginT+innerH-6-float64(p-50)/49*20, "start", `fill="#555" font-size="11"`, fmt.Sprintf("p%g", p))
		}
	}
	c.legend(items, true)
	if top > x.hi {
		c.text(marginL+innerW, marginT-8, "end", `fill="#777" font-size="11"`,
			fmt.Sprintf("x axis cut at p99.9; slowest %s ms", fmtMs(top)))
	}
	return c.String()
}

// TimelinePlot draws each request's TTFT and end-to-end latency against the
// time it was sent, and failed requests as red crosses on the time axis.
func TimelinePlot(title string, results []replay.Result) string {
	c := newCanvas(title)
	tMax, yMax := 0.0, 0.0
	for i := range results {
		r := &results[i]
		if r.Sent < 0 {
			continue
		}
		tMax = math.Max(tMax, r.Sent.Seconds())
		if r.OK() {
			yMax = math.Max(yMax, ms(r.E2E))
		}
	}
	x := newAxis(0, tMax, marginL, marginL+innerW, "time the request was sent (s from start)")
	y := newAxis(0, yMax, marginT+innerH, marginT, "latency (ms)")
	c.frame(x, y)
	series := []struct {
		color string
		get   func(*replay.Result) float64
	}{
		{Palette[1], func(r *replay.Result) float64 { return ms(r.E2E) }},
		{Palette[0], func(r *replay.Result) float64 { return ms(r.TTFT) }},
	}
	errs := 0
	for _, s := range series {
		fmt.Fprintf(&c.b, `<g fill="%s" fill-opacity="0.55">`+"\n", s.color)
		for i := range results {
			r := &results[i]
			if r.OK() {
				fmt.Fprintf(&c.b, `<circle cx="%s" cy="%s" r="2.2"/>`+"\n", f(x.px(r.Sent.Seconds())), f(y.px(s.get(r))))
			}
		}
		c.raw("</g>\n")
	}
	c.raw(`<g stroke="#D00000" stroke-width="1.5">` + "\n")
	for i := range results {
		r := &results[i]
		if r.OK() || r.Sent < 0 {
			continue
		}
		errs++
		px, py := x.px(r.Sent.Seconds()), y.px(0)-4
		c.line(px-3, py-3, px+3, py+3, "#D00000", 1.5, "")
		c.line(px-3, py+3, px+3, py-3, "#D00000", 1.5, "")
	}
	c.raw("</g>\n")
	items := []legendItem{{Palette[0], "time to first token", true}, {Palette[1], "end-to-end latency", true}}
	if errs > 0 {
		items = append(items, legendItem{"#D00000", fmt.Sprintf("failed request (%d)", errs), true})
	}
	c.legend(items, false)
	return c.String()
}

// PodPlot draws the successful requests each pod served as bars, with a
// dashed line at an even share.
func PodPlot(title string, pods []PodLoad) string {
	c := newCanvas(title)
	most, total := 0, 0
	for _, p := range pods {
		most = max(most, p.Requests)
		total += p.Requests
	}
	y := newAxis(0, float64(most), marginT+innerH, marginT, "requests served")
	x := axis{lo: 0, hi: 1, p0: marginL, p1: marginL + innerW} // the pod names label the x axis
	c.frame(x, y)
	n := len(pods)
	if n == 0 {
		c.text(marginL+innerW/2, marginT+innerH/2, "middle", `fill="#777"`, "no successful requests")
		return c.String()
	}
	slot := float64(innerW) / float64(n)
	every := int(math.Ceil(float64(n) / 24)) // at most about 24 labels
	for i, p := range pods {
		x0 := marginL + slot*float64(i)
		top := y.px(float64(p.Requests))
		c.rect(x0+slot*0.15, top, slot*0.7, marginT+innerH-top, Palette[0], "none")
		if n <= 16 {
			c.text(x0+slot/2, top-4, "middle", `fill="#333" font-size="11"`, fmt.Sprint(p.Requests))
		}
		if i%every == 0 {
			lx, ly := x0+slot/2, float64(marginT+innerH+14)
			fmt.Fprintf(&c.b, `<text x="%s" y="%s" text-anchor="end" transform="rotate(-30 %s %s)" fill="#333" font-size="10">%s</text>`+"\n",
				f(lx), f(ly), f(lx), f(ly), esc(p.Pod))
		}
	}
	mean := float64(total) / float64(n)
	c.line(marginL, y.px(mean), marginL+innerW, y.px(mean), Palette[3], 1.5, "6,4")
	c.legend([]legendItem{{Palette[0], "requests served", false},
		{Palette[3], fmt.Sprintf("even share (%.1f)", mean), false}}, true)
	return c.String()
}

// fmtMs formats milliseconds with a precision that suits their size.
func fmtMs(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
