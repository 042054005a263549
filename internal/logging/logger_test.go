package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

func TestNewWritesTheFormat(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, Options{Format: FormatJSON, Level: "warn"})
	if err != nil {
		t.Fatal(err)
	}
	log.Info("dropped below warn")
	log.Warn("kept", "k", 7)
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("JSON format wrote %q: %v", buf.String(), err)
	}
	if m["msg"] != "kept" || m["k"] != 7.0 || m["level"] != "WARN" {
		t.Errorf("got %v, want msg kept, k 7, level WARN (and the info line dropped)", m)
	}
	buf.Reset()
	log, err = New(&buf, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello", "k", 7)
	if got := buf.String(); !strings.Contains(got, "level=INFO msg=hello k=7") {
		t.Errorf("text format wrote %q", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"format", Options{Format: "xml", Level: "info"}, `"xml"`},
		{"level", Options{Format: "json", Level: "loud"}, `"loud"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(io.Discard, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if err := (Options{Format: "xml", Level: "info"}).Validate(); !errors.Is(err, ErrFormat) {
		t.Errorf("got %v, want ErrFormat", err)
	}
}

func TestParseFlagsHelpAndErrors(t *testing.T) {
	newFS := func(errw io.Writer) (*flag.FlagSet, func() Options) {
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		fs.SetOutput(errw)
		return fs, BindFlags(fs, DefaultOptions())
	}
	for _, arg := range []string{"-h", "--help", "-help"} {
		var out, errw bytes.Buffer
		fs, _ := newFS(&errw)
		help, err := ParseFlags(fs, []string{arg}, &out)
		if !help || err != nil {
			t.Errorf("%s: help %v, err %v; want help and no error", arg, help, err)
		}
		if !strings.Contains(out.String(), "Usage of demo:") || !strings.Contains(out.String(), "-log-format") {
			t.Errorf("%s: usage on out %q, want the flags", arg, out.String())
		}
		if errw.Len() != 0 {
			t.Errorf("%s: wrote %q to the error output, want nothing", arg, errw.String())
		}
	}
	var out, errw bytes.Buffer
	fs, opts := newFS(&errw)
	help, err := ParseFlags(fs, []string{"--no-such-flag"}, &out)
	if help || err == nil || out.Len() != 0 || !strings.Contains(errw.String(), "Usage of demo:") {
		t.Errorf("bad flag: help %v, err %v, out %q, err output %q; want an error and the usage on the error output", help, err, out.String(), errw.String())
	}
	fs, opts = newFS(&errw)
	if _, err := ParseFlags(fs, []string{"--log-format", "json", "--log-level", "debug"}, &out); err != nil {
		t.Fatal(err)
	}
	if got := opts(); got != (Options{Format: "json", Level: "debug"}) {
		t.Errorf("got %+v", got)
	}
}

func TestBindAccessFlagsKeepsWhatIsNotGiven(t *testing.T) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	apply := BindAccessFlags(fs, DefaultAccessConfig())
	if err := fs.Parse([]string{"--access-log-sample", "0.25"}); err != nil {
		t.Fatal(err)
	}
	c := AccessConfig{Enabled: false, Sample: 1} // as a configuration file said
	apply(&c)
	if c != (AccessConfig{Enabled: false, Sample: 0.25}) {
		t.Errorf("got %+v, want enabled false (from the file) and sample 0.25 (from the flag)", c)
	}
}
