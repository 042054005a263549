package logging

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// The log formats.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// ErrFormat reports a log format that is neither text nor json.
var ErrFormat = errors.New("logging: unknown log format")

// Options say how a daemon writes its log.
type Options struct {
	// Format is the line format: "text" (slog's key=value) or "json" (one
	// JSON object a line, for log collectors).
	Format string `yaml:"format"`
	// Level is the lowest level written: debug, info, warn or error.
	Level string `yaml:"level"`
}

// DefaultOptions are text lines at info.
func DefaultOptions() Options { return Options{Format: FormatText, Level: "info"} }

// Validate checks the format and the level.
func (o Options) Validate() error {
	if o.Format != FormatText && o.Format != FormatJSON {
		return fmt.Errorf("%w: --log-format %q (want text or json)", ErrFormat, o.Format)
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(o.Level)); err != nil {
		return fmt.Errorf("logging: --log-level %q: %w", o.Level, err)
	}
	return nil
}

// New returns a logger writing to w as o says.
func New(w io.Writer, o Options) (*slog.Logger, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(o.Level)) // checked by Validate
	ho := &slog.HandlerOptions{Level: lv}
	if o.Format == FormatJSON {
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return slog.New(slog.NewTextHandler(w, ho)), nil
}

// BindFlags defines --log-format and --log-level on fs with d's values as
// defaults and returns a function that reads them once fs is parsed.
func BindFlags(fs *flag.FlagSet, d Options) func() Options {
	format := fs.String("log-format", d.Format, "log line format: text or json")
	level := fs.String("log-level", d.Level, "log level: debug, info, warn, error")
	return func() Options { return Options{Format: *format, Level: *level} }
}

// BindAccessFlags defines --access-log and --access-log-sample on fs with
// d's values as defaults. The returned function applies the flags given on
// the command line to c (flags not given leave c as it is, so a
// configuration file's values stand).
func BindAccessFlags(fs *flag.FlagSet, d AccessConfig) func(c *AccessConfig) {
	on := fs.Bool("access-log", d.Enabled, "write an access and decision log line at info for every data-plane request (sampled by --access-log-sample)")
	sample := fs.Float64("access-log-sample", d.Sample, "fraction of data-plane requests given an access log line, 0 to 1")
	return func(c *AccessConfig) {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "access-log":
				c.Enabled = *on
			case "access-log-sample":
				c.Sample = *sample
			}
		})
	}
}

// ParseFlags parses args into fs. A request for help (-h, --help) prints
// the usage to out and reports help true with no error, so the binary
// exits 0; a bad command line prints the usage to fs's output and returns
// fs's error.
func ParseFlags(fs *flag.FlagSet, args []string, out io.Writer) (help bool, err error) {
	usage := fs.Usage
	if usage == nil {
		usage = func() {
			fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
	}
	fs.Usage = func() {} // printed below, where help or error says
	err = fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		prev := fs.Output()
		fs.SetOutput(out)
		usage()
		fs.SetOutput(prev)
		return true, nil
	case err != nil:
		usage()
	}
	return false, err
}
