// Command celld is the cell daemon: it indexes the KV caches of up to 256
// engine pods from their KV events and serves the cell's state, health and
// metrics. See package cell for what it runs, and
// cell/testdata/celld.example.yaml for a documented configuration.
//
//	celld --config celld.yaml [--http-addr HOST:PORT] [--grpc-addr HOST:PORT] [--log-level info]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/cell/telemetry"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "celld:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("celld", flag.ContinueOnError)
	configPath := fs.String("config", "", "path to the YAML configuration (empty: all defaults)")
	httpAddr := fs.String("http-addr", "", "override http_addr")
	grpcAddr := fs.String("grpc-addr", "", "override grpc_addr")
	cellID := fs.String("cell-id", "", "override cell_id")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))

	cfg := cell.DefaultConfig()
	if *configPath != "" {
		var err error
		if cfg, err = cell.LoadConfig(*configPath); err != nil {
			return err
		}
	}
	if *httpAddr != "" {
		cfg.HTTPAddr = *httpAddr
	}
	if *grpcAddr != "" {
		cfg.GRPCAddr = *grpcAddr
	}
	if *cellID != "" {
		cfg.CellID = *cellID
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	shutdown, err := telemetry.Setup(ctx, "celld")
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer shutdown(context.Background())
	return cell.Run(ctx, cfg, log)
}
