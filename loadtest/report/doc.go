// Package report turns the Results of a replay (package replay) into what a
// person reads: a Summary (percentiles of TTFT, inter-token and end-to-end
// latency, throughput, the cached-token ratio, requests per pod), a text
// table, a JSON file, SVG plots drawn by hand and an index.html that shows
// them.
//
// # Figures
//
// Latency percentiles cover successful requests only; inter-token gaps of
// all requests are pooled. Percentiles interpolate linearly between the two
// nearest ranks. The cached-token ratio is the sum of cached prompt tokens
// over the sum of prompt tokens of the successful requests: the share of
// prefill work the engines' prefix caches saved. A pod's share is its
// successful requests over all successful requests; the mean share is one
// over the number of pods, so MaxPodShare / MeanPodShare says how uneven the
// load was (1 is perfectly even).
//
// # Plots
//
// The SVG files use only basic elements (rect, line, polyline, circle,
// path, text) with axes, ticks, labels, a title and a legend, so they render
// in any browser and can be checked with encoding/xml. Several runs can
// share a plot (the routing comparison overlays its modes' TTFT CDFs).
package report
