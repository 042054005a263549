package cell

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// maxOverride bounds the per-request overrides. A weight or temperature
// beyond it is not a tuning any profile means; it would only make the
// scores overflow to Inf.
const maxOverride = 1e6

// parseOverrides reads the per-request override headers into o. Each must
// be a finite number in [0, maxOverride]: NaN and Inf would poison every
// score they touch (a NaN compares false with everything, so the picker
// would follow no score at all), and a negative weight or temperature
// means nothing. A bad value is a 400 naming the header.
func parseOverrides(h http.Header, o *pipeline.Overrides) error {
	for _, f := range []struct {
		header string
		dst    **float64
	}{{OverlapWeightHeader, &o.OverlapWeight}, {TemperatureHeader, &o.Temperature}} {
		v := h.Get(f.header)
		if v == "" {
			continue
		}
		x, err := parseOverride(v)
		if err != nil {
			return &openai.RequestError{Param: f.header, Err: openai.ErrInvalidRequest,
				Msg: strconv.Quote(v) + " is not a number from 0 to 1e6"}
		}
		*f.dst = &x
	}
	return nil
}

// errOverride is parseOverride's error; parseOverrides names the header.
var errOverride = errors.New("cell: not a finite number from 0 to 1e6")

// parseOverride parses one override value: a finite decimal number from 0
// to maxOverride.
func parseOverride(v string) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > maxOverride {
		return 0, errOverride
	}
	return x, nil
}
