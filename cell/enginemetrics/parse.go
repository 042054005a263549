package enginemetrics

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrParse is returned for a malformed line of a family Parse keeps.
var ErrParse = errors.New("enginemetrics: malformed metrics")

// maxCount bounds a request count (a sum of huge readings is no count).
const maxCount = 1e9

// maxFamilies bounds the name sets one Parse reads (auto reads two).
const maxFamilies = 4

// Sample is what one scrape of one pod said.
type Sample struct {
	// Engine is the family the values came from (vllm, sglang, or auto
	// when a custom family matched).
	Engine Engine
	// Waiting and Running are the requests queued and running, summed over
	// the engine's series (data-parallel ranks).
	Waiting, Running float64
	// KVUsage is the KV cache's used fraction in [0, 1], the mean over
	// the engine's series.
	KVUsage float64
	// HasQueue, HasKVUsage and HasLoRA say which of the values were present.
	HasQueue, HasKVUsage, HasLoRA bool
	// RunningLoRA and WaitingLoRA are the adapters of the running and the
	// waiting requests, from the newest lora_info series; MaxLoRA is the
	// adapters the engine can hold at once (0 when unknown).
	RunningLoRA, WaitingLoRA []string
	MaxLoRA                  int
	// CapacityTokens is the KV cache's size in tokens (num_gpu_blocks x
	// block_size, summed over series); 0 when unknown.
	CapacityTokens int64
}

// partial accumulates one family's series.
type partial struct {
	hits             int
	waiting, running float64
	queue            bool
	kvSum            float64
	kvN              int
	loraTS           float64
	lora             bool
	loraLine         []byte // the newest lora_info line's labels
	capacity         int64
}

// Parse reads a Prometheus text exposition body and fills s from the
// families of the first name set in fams that appears in it (an empty
// body, or one with none of them, leaves s empty with Engine ""). s's
// adapter slices are reused. Parse does not keep body.
func Parse(body []byte, fams []Names, engines []Engine, s *Sample) error {
	if len(fams) > maxFamilies {
		return fmt.Errorf("%w: %d name sets, at most %d", ErrParse, len(fams), maxFamilies)
	}
	var acc [maxFamilies]partial
	line := 0
	for len(body) > 0 {
		var ln []byte
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			ln, body = body[:i], body[i+1:]
		} else {
			ln, body = body, nil
		}
		line++
		if len(ln) > 0 && (ln[0] == ' ' || ln[0] == '\t') {
			ln = bytes.TrimLeft(ln, " \t")
		}
		if len(ln) == 0 || ln[0] == '#' {
			continue
		}
		for fi := range fams {
			names := fams[fi].all()
			for k, n := range names {
				if !isName(ln, n) {
					continue
				}
				if len(ln) == len(n) {
					return fmt.Errorf("%w: line %d: %s: no value", ErrParse, line, n)
				}
				if err := acc[fi].take(k+1, n, ln[len(n):], line); err != nil {
					return err
				}
			}
		}
	}
	*s = Sample{RunningLoRA: s.RunningLoRA[:0], WaitingLoRA: s.WaitingLoRA[:0]}
	for fi := range fams {
		a := &acc[fi]
		if a.hits == 0 {
			continue
		}
		s.Engine = EngineAuto
		if fi < len(engines) {
			s.Engine = engines[fi]
		}
		s.Waiting, s.Running, s.HasQueue = min(a.waiting, maxCount), min(a.running, maxCount), a.queue
		if a.kvN > 0 {
			s.KVUsage, s.HasKVUsage = min(max(a.kvSum/float64(a.kvN), 0), 1), true
		}
		s.CapacityTokens = a.capacity
		if a.lora {
			s.HasLoRA = true
			_ = eachLabel(a.loraLine, func(k string, v []byte) {
				switch k {
				case "running_lora_adapters":
					s.RunningLoRA = splitList(v, s.RunningLoRA)
				case "waiting_lora_adapters":
					s.WaitingLoRA = splitList(v, s.WaitingLoRA)
				case "max_lora":
					s.MaxLoRA, _ = strconv.Atoi(string(v))
				}
			})
		}
		return nil
	}
	return nil
}

// take adds one line of family kind (1 waiting, 2 running, 3 KV usage, 4
// LoRA info, 5 cache config: the order of Names.all) named name to a; rest
// is the line after the name.
func (a *partial) take(kind int, name string, rest []byte, line int) error {
	labels, val, err := splitLine(rest)
	if err != nil {
		return fmt.Errorf("%w: line %d: %s: %v", ErrParse, line, name, err)
	}
	if math.IsNaN(val) || math.IsInf(val, 0) {
		return nil // no usable reading; not an error (an idle engine may say NaN)
	}
	a.hits++
	switch kind {
	case 1:
		a.waiting += max(val, 0)
		a.queue = true
	case 2:
		a.running += max(val, 0)
		a.queue = true
	case 3:
		a.kvSum += val
		a.kvN++
	case 4:
		if !a.lora || val >= a.loraTS {
			a.lora, a.loraTS, a.loraLine = true, val, labels
		}
	case 5:
		var blocks, size int64
		err := eachLabel(labels, func(k string, v []byte) {
			switch k {
			case "num_gpu_blocks":
				blocks, _ = strconv.ParseInt(string(v), 10, 64)
			case "block_size":
				size, _ = strconv.ParseInt(string(v), 10, 64)
			}
		})
		if err != nil {
			return fmt.Errorf("%w: line %d: %s: %v", ErrParse, line, name, err)
		}
		if blocks > 0 && size > 0 && blocks <= math.MaxInt64/size {
			a.capacity = satAdd(a.capacity, blocks*size)
		}
	}
	return nil
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// isName reports whether the metric name that starts ln is n (n "" is no
// name): ln starts with n, followed by a label set, a blank or nothing.
func isName(ln []byte, n string) bool {
	if n == "" || len(ln) < len(n) {
		return false
	}
	if len(ln) > len(n) {
		if c := ln[len(n)]; c != '{' && c != ' ' && c != '\t' {
			return false
		}
	}
	return string(ln[:len(n)]) == n
}

// all lists the names of f.
func (f *Names) all() [5]string {
	return [5]string{f.Waiting, f.Running, f.KVUsage, f.LoRAInfo, f.CacheConfig}
}

// splitLine splits what follows a metric name into the label text (between
// the braces, unparsed; nil without labels) and the value; a trailing
// timestamp is ignored.
func splitLine(rest []byte) (labels []byte, val float64, err error) {
	if len(rest) > 0 && rest[0] == '{' {
		end, err := labelsEnd(rest[1:])
		if err != nil {
			return nil, 0, err
		}
		labels, rest = rest[1:1+end], rest[2+end:]
	}
	rest = bytes.TrimLeft(rest, " \t")
	if i := bytes.IndexAny(rest, " \t"); i >= 0 {
		rest = rest[:i]
	}
	if len(rest) == 0 {
		return nil, 0, errors.New("no value")
	}
	val, err = strconv.ParseFloat(string(rest), 64)
	if err != nil {
		return nil, 0, fmt.Errorf("value %q", rest)
	}
	return labels, val, nil
}

// labelsEnd returns the index of the '}' that closes a label set, skipping
// quoted values with their escapes.
func labelsEnd(b []byte) (int, error) {
	quoted := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == '}':
			return i, nil
		}
	}
	return 0, errors.New("unterminated labels")
}

// eachLabel calls f with every label's name and unescaped value (valid
// during the call only).
func eachLabel(b []byte, f func(k string, v []byte)) error {
	var val []byte
	for {
		b = bytes.TrimLeft(b, " \t,")
		if len(b) == 0 {
			return nil
		}
		eq := bytes.IndexByte(b, '=')
		if eq <= 0 {
			return errors.New("label without value")
		}
		k := string(bytes.TrimSpace(b[:eq]))
		b = bytes.TrimLeft(b[eq+1:], " \t")
		if len(b) == 0 || b[0] != '"' {
			return fmt.Errorf("label %s: value not quoted", k)
		}
		val = val[:0]
		i := 1
		for ; i < len(b) && b[i] != '"'; i++ {
			if b[i] == '\\' && i+1 < len(b) {
				i++
				if b[i] == 'n' {
					val = append(val, '\n')
					continue
				}
			}
			val = append(val, b[i])
		}
		if i >= len(b) {
			return fmt.Errorf("label %s: unterminated value", k)
		}
		f(k, val)
		b = b[i+1:]
	}
}

// splitList appends the non-empty comma-separated names of v to dst[:0].
func splitList(v []byte, dst []string) []string {
	dst = dst[:0]
	for _, s := range strings.Split(string(v), ",") {
		if s = strings.TrimSpace(s); s != "" {
			dst = append(dst, s)
		}
	}
	return dst
}
