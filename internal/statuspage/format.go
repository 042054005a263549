package statuspage

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"time"
)

// Duration writes d for a person: "850µs", "12.3ms", "4.2s", "3m05s",
// "2h10m"; a negative duration is "-".
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// Bytes writes n bytes in binary units: "512 B", "1.5 KiB", "3.0 MiB".
func Bytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		if v < 1024 || u == "TiB" {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return "" // not reached
}

// Ratio returns num/den, NaN when den is 0 (no data, which Percent writes
// as "-").
func Ratio(num, den float64) float64 {
	if den == 0 {
		return math.NaN()
	}
	return num / den
}

// Percent writes a ratio as a percentage with one decimal, "-" for NaN or
// an infinity (no data).
func Percent(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", r*100)
}

// Rate writes a small probability (a false-positive rate) as a
// percentage with two decimals: "0.37%", "< 0.01%" below that, "0%" for
// none and "-" for NaN.
func Rate(r float64) string {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return "-"
	case r <= 0:
		return "0%"
	case r < 0.0001:
		return "< 0.01%"
	}
	return fmt.Sprintf("%.2f%%", r*100)
}

// Count writes n with thin groups of three digits: "12 345 678".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ' ')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// Age writes how long ago t was, relative to now: "4.2s ago"; "never"
// for the zero time.
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return Duration(now.Sub(t).Round(time.Millisecond)) + " ago"
}

// toInt64 converts the integer kinds templates pass to int64.
func toInt64(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int32:
		return int64(n)
	case int64:
		return n
	case uint32:
		return int64(n)
	case uint64:
		if n > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}

// funcs are the helpers every page's template may call.
func funcs() template.FuncMap {
	return template.FuncMap{
		"duration": Duration,
		"bytes":    func(n any) string { return Bytes(toInt64(n)) },
		"count":    func(n any) string { return Count(toInt64(n)) },
		"percent":  Percent,
		"rate":     Rate,
		"ratio":    func(num, den any) float64 { return Ratio(toFloat(num), toFloat(den)) },
		"age":      Age,
		"ms":       func(ms float64) string { return Duration(time.Duration(ms * 1e6)) },
		"seconds":  func(s float64) string { return Duration(time.Duration(s * 1e9)) },
		"meterval": func(r float64) float64 {
			if math.IsNaN(r) || math.IsInf(r, 0) {
				return 0
			}
			return min(max(r, 0), 1)
		},
	}
}

// toFloat converts the number kinds templates pass to float64.
func toFloat(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return float64(toInt64(v))
}
