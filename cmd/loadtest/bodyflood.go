package main

import (
	"context"
	"flag"
	"io"
	"strings"

	"github.com/cellrouter/cellrouter/loadtest/bodyflood"
)

// runBodyflood is the "bodyflood" subcommand: flags into a
// bodyflood.Config, then bodyflood.Run; the report goes to stdout as JSON.
func runBodyflood(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bodyflood", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := bodyflood.DefaultConfig()
	bin := fs.String("globald", "", "the globald binary to start and measure (go build -o /tmp/globald ./cmd/globald)")
	extra := fs.String("globald-args", "", "extra globald flags, space-separated (e.g. \"--max-buffered-bytes 67108864\")")
	conc := fs.Int("concurrency", d.Concurrency, "requests sent at once")
	size := fs.Int("body-bytes", d.BodyBytes, "size of each request body (a chat of one long message)")
	settle := fs.Duration("settle", d.Settle, "wait after the flood before reading the resident memory again")
	timeout := fs.Duration("timeout", d.Timeout, "bound of the whole run")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if help, err := parseFlags("bodyflood", fs, args); help || err != nil {
		return err
	}
	cfg := d
	cfg.Globald, cfg.Args, cfg.Concurrency, cfg.BodyBytes, cfg.Settle, cfg.Timeout = *bin, strings.Fields(*extra), *conc, *size, *settle, *timeout
	if !*quiet {
		cfg.Log = stderr
	}
	rep, err := bodyflood.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return writeJSON(stdout, rep)
}
