package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Palette are the series colours, chosen to stay apart for colour-blind
// readers (Okabe-Ito).
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"}

// Plot geometry, in SVG user units.
const (
	plotW, plotH   = 760, 420
	marginL        = 78
	marginR        = 24
	marginT        = 48
	marginB        = 58
	innerW, innerH = plotW - marginL - marginR, plotH - marginT - marginB
)

// canvas accumulates one SVG document.
type canvas struct {
	b strings.Builder
}

// newCanvas starts a document with a white background and a title.
func newCanvas(title string) *canvas {
	c := &canvas{}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		plotW, plotH, plotW, plotH)
	fmt.Fprintf(&c.b, `<title>%s</title>`+"\n", esc(title))
	fmt.Fprintf(&c.b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", plotW, plotH)
	c.text(plotW/2, 26, "middle", "font-size=\"16\" font-weight=\"bold\"", title)
	return c
}

// String closes and returns the document.
func (c *canvas) String() string { return c.b.String() + "</svg>\n" }

// text writes a text element; attrs are extra raw attributes.
func (c *canvas) text(x, y float64, anchor, attrs, s string) {
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" text-anchor="%s" %s>%s</text>`+"\n", f(x), f(y), anchor, attrs, esc(s))
}

// line writes a line element.
func (c *canvas) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	d := ""
	if dash != "" {
		d = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
	}
	fmt.Fprintf(&c.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
		f(x1), f(y1), f(x2), f(y2), stroke, f(width), d)
}

// rect writes a filled rectangle.
func (c *canvas) rect(x, y, w, h float64, fill, stroke string) {
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s"/>`+"\n", f(x), f(y), f(w), f(h), fill, stroke)
}

// raw writes pre-built markup.
func (c *canvas) raw(s string) { c.b.WriteString(s) }

// axis maps data values to pixels along one dimension.
type axis struct {
	lo, hi   float64 // data range
	p0, p1   float64 // pixel range
	ticks    []float64
	label    string
	unitFrac bool // ticks are fractions shown as percentages
	log      bool // logarithmic: lo and hi are positive
}

// newAxis returns an axis over [lo, hi] widened to nice ticks.
func newAxis(lo, hi, p0, p1 float64, label string) axis {
	if !(hi > lo) {
		hi = lo + 1
	}
	ticks := niceTicks(lo, hi, 6)
	return axis{lo: ticks[0], hi: ticks[len(ticks)-1], p0: p0, p1: p1, ticks: ticks, label: label}
}

// newLogAxis returns a logarithmic axis over [lo, hi] (lo > 0) widened to
// 1-2-5 ticks: latencies span decades, and a linear axis squashes the
// body of their distribution against zero.
func newLogAxis(lo, hi, p0, p1 float64, label string) axis {
	lo = math.Max(lo, 1e-3)
	hi = math.Max(hi, lo*10)
	var ticks []float64
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi*10; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := d * m
			if v >= lo/2.0001 && (len(ticks) == 0 || ticks[len(ticks)-1] < hi) {
				ticks = append(ticks, v)
			}
		}
	}
	// Start at the largest tick not above lo.
	for len(ticks) > 2 && ticks[1] <= lo {
		ticks = ticks[1:]
	}
	return axis{lo: ticks[0], hi: ticks[len(ticks)-1], p0: p0, p1: p1, ticks: ticks, label: label, log: true}
}

// px maps v to a pixel coordinate, clamped to the axis.
func (a axis) px(v float64) float64 {
	v = math.Max(a.lo, math.Min(a.hi, v))
	if a.log {
		return a.p0 + (math.Log10(v)-math.Log10(a.lo))/(math.Log10(a.hi)-math.Log10(a.lo))*(a.p1-a.p0)
	}
	return a.p0 + (v-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

// tickLabel formats a tick value.
func (a axis) tickLabel(v float64) string {
	if a.unitFrac {
		return short(100*v) + "%"
	}
	return fmtNum(v)
}

// niceTicks returns about n evenly spaced round values (steps of 1, 2 or 5
// times a power of ten) covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	raw := (hi - lo) / float64(max(n-1, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	start := math.Floor(lo/step) * step
	var out []float64
	for v := start; v <= hi+step*1e-9 || len(out) < 2; v += step {
		out = append(out, math.Round(v/step)*step)
		if len(out) > 4*n {
			break
		}
	}
	if out[len(out)-1] < hi {
		out = append(out, out[len(out)-1]+step)
	}
	return out
}

// frame draws the grid, the axes, their ticks and labels.
func (c *canvas) frame(x, y axis) {
	for _, t := range y.ticks {
		py := y.px(t)
		c.line(marginL, py, marginL+innerW, py, "#e5e5e5", 1, "")
		c.text(marginL-8, py+4, "end", `fill="#333"`, y.tickLabel(t))
	}
	for _, t := range x.ticks {
		px := x.px(t)
		c.line(px, marginT, px, marginT+innerH, "#f0f0f0", 1, "")
		c.line(px, marginT+innerH, px, marginT+innerH+5, "#333", 1, "")
		c.text(px, marginT+innerH+19, "middle", `fill="#333"`, x.tickLabel(t))
	}
	c.line(marginL, marginT+innerH, marginL+innerW, marginT+innerH, "#333", 1, "")
	c.line(marginL, marginT, marginL, marginT+innerH, "#333", 1, "")
	c.text(marginL+innerW/2, plotH-14, "middle", `fill="#111" font-size="13"`, x.label)
	fmt.Fprintf(&c.b, `<text x="18" y="%s" text-anchor="middle" transform="rotate(-90 18 %s)" fill="#111" font-size="13">%s</text>`+"\n",
		f(marginT+innerH/2), f(marginT+innerH/2), esc(y.label))
}

// legendItem is one entry of a legend: a swatch and a label.
type legendItem struct {
	color, label string
	dot          bool // a dot swatch (scatter) instead of a line
}

// legend draws items in a box at the top left of the plot area.
func (c *canvas) legend(items []legendItem, right bool) {
	if len(items) == 0 {
		return
	}
	w := 0
	for _, it := range items {
		w = max(w, len(it.label))
	}
	bw := float64(36 + 7*w)
	bh := float64(8 + 18*len(items))
	x := float64(marginL + 10)
	if right {
		x = marginL + innerW - 10 - bw
	}
	y := float64(marginT + 8)
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="#ffffff" fill-opacity="0.9" stroke="#bbb"/>`+"\n", f(x), f(y), f(bw), f(bh))
	for i, it := range items {
		cy := y + 13 + 18*float64(i)
		if it.dot {
			fmt.Fprintf(&c.b, `<circle cx="%s" cy="%s" r="4" fill="%s"/>`+"\n", f(x+15), f(cy), it.color)
		} else {
			c.line(x+6, cy, x+24, cy, it.color, 2.5, "")
		}
		c.text(x+30, cy+4, "start", `fill="#111"`, it.label)
	}
}

// f formats a coordinate with at most one decimal.
func f(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// fmtNum formats a tick value compactly (1500 as 1.5k).
func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return short(v/1e6) + "M"
	case a >= 1e4:
		return short(v/1e3) + "k"
	}
	return short(v)
}

// short formats v with the fewest digits that single precision needs, so
// that a tick computed as 3 * 0.1 prints as 0.3.
func short(v float64) string { return strconv.FormatFloat(float64(float32(v)), 'f', -1, 32) }

// esc escapes text for XML.
func esc(s string) string { return html.EscapeString(s) }
