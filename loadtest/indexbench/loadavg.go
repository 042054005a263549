package indexbench

import (
	"os"
	"strconv"
	"strings"
)

// loadAverage returns the one-minute load average of the machine, or 0
// where /proc/loadavg is unavailable. Timings taken while other processes
// keep the cores busy are noisy; the report carries this figure so that a
// reader can tell.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}
