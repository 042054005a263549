package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cellrouter/cellrouter/cell/events/eventlog"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/loadtest/eventgen"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// runEventlog is the "eventlog" subcommand: it records the KV events a
// fleet of engines publishes for a trace into an event log file.
func runEventlog(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eventlog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := eventgen.DefaultConfig()
	tracePath := fs.String("trace", trace.DefaultPath, "Mooncake trace (JSON Lines); a relative path is also looked for above the working directory and the executable")
	out := fs.String("out", "", "event log file to write (required)")
	maxReq := fs.Int("max-requests", 0, "use only the first N requests (0 = all)")
	pods := fs.Int("pods", d.Pods, "engine pods, 1..256")
	blockSize := fs.Int("block-size", d.BlockSize, "engine block size in tokens (divides 512)")
	bpp := fs.Int("blocks-per-pod", d.BlocksPerPod, "each engine's KV cache size in blocks")
	model := fs.String("model", d.Model, "model name of the events")
	seed := fs.Uint64("seed", d.Seed, "seed of the assignment of requests to pods")
	form := fs.String("form", "array", "event form on the wire: array (legacy) or map")
	if help, err := parseFlags("eventlog", fs, args); help || err != nil {
		return err
	}
	if *out == "" {
		return errors.New("eventlog: --out is required")
	}
	wf := vllmwire.FormArray
	switch *form {
	case "array":
	case "map":
		wf = vllmwire.FormMap
	default:
		return fmt.Errorf("eventlog: --form %q: want array or map", *form)
	}
	path, err := locateTrace("eventlog", *tracePath)
	if err != nil {
		return err
	}
	recs, err := trace.ReadFile(path, *maxReq)
	if err != nil {
		return err
	}
	cfg := eventgen.Config{Pods: *pods, BlockSize: *blockSize, BlocksPerPod: *bpp, Model: *model, Seed: *seed}
	batches, err := eventgen.Generate(cfg, recs)
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := eventlog.NewWriter(f)
	if err != nil {
		return err
	}
	var buf []byte
	blocks := 0
	for i := range batches {
		b := &batches[i]
		if buf, err = vllmwire.EncodePayload(buf[:0], b, wf); err != nil {
			return err
		}
		if err := w.Write(eventlog.Record{Pod: b.Pod, Model: b.Model, Seq: b.Seq, Payload: buf}); err != nil {
			return err
		}
		for _, ev := range b.Events {
			blocks += len(ev.BlockHashes)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d batches, %d block events, %d requests, %d pods\n", *out, len(batches), blocks, len(recs), *pods)
	return nil
}
