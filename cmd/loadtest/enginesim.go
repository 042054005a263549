package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/internal/logging"
	"github.com/cellrouter/cellrouter/loadtest/enginesim"
)

// runEnginesim is the "enginesim" subcommand: flags into an
// enginesim.FleetConfig, then a fleet that runs until ctx ends (Ctrl-C).
// It prints each pod's id, HTTP address and ZMQ endpoints once the fleet
// is up.
func runEnginesim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("enginesim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := enginesim.DefaultConfig()
	pods := fs.Int("pods", 4, "number of simulated vLLM pods, 1..256")
	id := fs.String("id", "", "pod id prefix: pod i is <id>-<i> (empty: the default ids)")
	host := fs.String("host", "127.0.0.1", "address the pods' HTTP and ZMQ sockets bind")
	basePort := fs.Int("base-port", 0, "0: free ports; else pod i listens on HTTP base+3i, ZMQ PUB base+3i+1, replay base+3i+2")
	model := fs.String("model", d.Model, "served model name (also in the KV-event topic and the hash seed)")
	roles := fs.String("roles", "", "comma-separated role per pod (both, prefill, decode); empty: all both")
	blockSize := fs.Int("block-size", d.BlockSize, "KV block size in tokens")
	blocks := fs.Int("blocks", d.Blocks, "KV cache capacity per pod, in blocks")
	maxModelLen := fs.Int("max-model-len", d.MaxModelLen, "context length (prompt + max_tokens)")
	maxRunning := fs.Int("max-running", d.MaxRunning, "running-batch limit per pod; more requests queue FIFO")
	maxTokens := fs.Int("default-max-tokens", d.DefaultMaxTokens, "output tokens of a request without max_tokens")
	prefill := fs.Duration("prefill-per-token", d.PrefillPerToken, "modelled prefill time per uncached prompt token")
	decode := fs.Duration("decode-per-token", d.DecodePerToken, "modelled time per output token after the first")
	scale := fs.Float64("time-scale", d.TimeScale, "multiplies every modelled duration before sleeping (0: never sleep)")
	perChunk := fs.Int("tokens-per-chunk", d.TokensPerChunk, "output tokens per streamed chunk")
	tokJSON := fs.String("tokenizer-json", "", "tokenize text and chats with this Hugging Face tokenizer.json (\"demo\": the demo tokenizer); empty: the word hasher")
	chatTmpl := fs.String("chat-template", "chatml", "built-in chat template used with --tokenizer-json")
	form := fs.String("form", "array", "KV-event payload form: array or map")
	noReplay := fs.Bool("no-replay", false, "no replay socket")
	noEvents := fs.Bool("no-events", false, "publish no KV events")
	asJSON := fs.Bool("json", false, "print the pods as one JSON array")
	verbose := fs.Bool("v", false, "log the pods' diagnostics to stderr (in --log-format, from --log-level)")
	logOpts := logging.BindFlags(fs, logging.DefaultOptions())
	if help, err := parseFlags("enginesim", fs, args); help || err != nil {
		return err
	}
	pc := d
	pc.ID = *id
	pc.Model, pc.BlockSize, pc.Blocks, pc.MaxModelLen = *model, *blockSize, *blocks, *maxModelLen
	pc.MaxRunning, pc.DefaultMaxTokens, pc.TokensPerChunk = *maxRunning, *maxTokens, *perChunk
	pc.PrefillPerToken, pc.DecodePerToken, pc.TimeScale = *prefill, *decode, *scale
	pc.HTTPAddr = *host + ":0"
	pc.Events.Endpoint = "tcp://" + *host + ":0"
	pc.Events.ReplayEndpoint = "tcp://" + *host + ":0"
	if *noReplay {
		pc.Events.ReplayEndpoint = ""
	}
	pc.Events.Disabled = *noEvents
	switch *form {
	case "array":
		pc.Events.Form = vllmwire.FormArray
	case "map":
		pc.Events.Form = vllmwire.FormMap
	default:
		return fmt.Errorf("enginesim: --form %q, want array or map", *form)
	}
	switch *tokJSON {
	case "":
	case "demo":
		tmpl, err := tokenizer.ChatTemplateByName(*chatTmpl)
		if err != nil {
			return err
		}
		bpe, err := tokenizer.Load(tokenizer.DemoJSON(), tokenizer.Options{})
		if err != nil {
			return err
		}
		pc.Tokenizer = &enginesim.HFTokenizer{BPE: bpe, Template: tmpl}
	default:
		hf, err := enginesim.LoadHFTokenizer(*tokJSON, *chatTmpl)
		if err != nil {
			return err
		}
		pc.Tokenizer = hf
	}
	pc.Logger = slog.New(slog.DiscardHandler)
	if *verbose {
		var err error
		if pc.Logger, err = logging.New(stderr, logOpts()); err != nil {
			return err
		}
	}
	fc := enginesim.FleetConfig{Pods: *pods, Pod: pc, BasePort: *basePort}
	if *roles != "" {
		for _, r := range strings.Split(*roles, ",") {
			fc.Roles = append(fc.Roles, enginesim.Role(strings.TrimSpace(r)))
		}
	}
	fleet, err := enginesim.StartFleet(fc)
	if err != nil {
		return err
	}
	if err := printFleet(stdout, fleet, *asJSON); err != nil {
		_ = fleet.Close()
		return err
	}
	fmt.Fprintln(stderr, "enginesim: running; Ctrl-C to stop")
	<-ctx.Done()
	return fleet.Close()
}

// podInfo is one pod as printed.
type podInfo struct {
	ID     string `json:"id"`
	Role   string `json:"role"`
	HTTP   string `json:"http"`
	ZMQ    string `json:"zmq"`
	Replay string `json:"replay"`
	Topic  string `json:"topic"`
}

// printFleet writes the pods' addresses as a table or a JSON array.
func printFleet(w io.Writer, f *enginesim.Fleet, asJSON bool) error {
	infos := make([]podInfo, 0, len(f.Pods()))
	for _, p := range f.Pods() {
		infos = append(infos, podInfo{ID: p.ID(), Role: string(p.Role()), HTTP: p.URL(), ZMQ: p.ZMQEndpoint(), Replay: p.ReplayEndpoint(), Topic: p.Topic()})
	}
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(infos)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tROLE\tHTTP\tZMQ PUB\tREPLAY\tTOPIC")
	for _, i := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", i.ID, i.Role, i.HTTP, i.ZMQ, i.Replay, i.Topic)
	}
	return tw.Flush()
}
