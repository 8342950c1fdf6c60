package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/gcfloor"
)

// gcHeapFloor is the heap goal the collector is kept at, at least, while
// the live heap is small (BENCHMARKS.md, "The fourth round"):
// under the echo load the live heap is about 2 MiB, and GOGC=100 collected
// about 60 times a second. 32 MiB served that load as well as 64 MiB did,
// and leaves the idle sessions' figure as it was; 64 MiB raised it.
const gcHeapFloor = 32 << 20

// runServer serves the config until SIGINT or SIGTERM, then drains; a
// second signal during the drain exits at once with status 1.
func runServer(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("c", defaultConfig, "configuration `FILE`")
	textLogs := fs.Bool("text", false, "log as text instead of the config's log.format")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load(*file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log := newLogger(stderr, cfg.Log, *textLogs)
	defer startGCFloor(os.Getenv, cfg.Lua.HeapLimitBytes)()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// SIGHUP never stops the process (SPEC §9): it asks for a reload.
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)

	// A signal during the start (a node waiting for its NATS, its
	// storage, a long init) ends the start: the process exits 1.
	startCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	started := make(chan struct{})
	startSig := make(chan os.Signal, 1)
	go func() {
		select {
		case s := <-sigs:
			cancel()
			startSig <- s
		case <-started:
		}
		close(startSig)
	}()
	srv, err := bootstrap.Start(startCtx, *file, bootstrap.Options{Logger: log})
	close(started)
	early := <-startSig // the signal the start took, if any
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, l := range srv.Report.Config.Network.Listeners {
		attrs := []any{"listener", l.Name, "address", srv.Gateway.Addr(l.Name).String(), "transport", l.Transport}
		if l.Transport == "ws" {
			attrs = append(attrs, "path", l.Path)
		}
		attrs = append(attrs, "tls", l.TLS != nil, "envelope", l.Protocol.Envelope, "body", l.Protocol.Body, "entry_service", l.EntryService)
		log.Info("listening", attrs...)
	}

	if srv.Admin != nil {
		log.Info("admin listening", "address", srv.Admin.Addr())
		if srv.Admin.Play() != "" {
			log.Info("browser client", "url", "http://"+srv.Admin.Addr()+"/play/", "listener", srv.Admin.Play())
		}
	}

	sig := early // a signal as the start ended: drain at once
	for sig == nil {
		select {
		case sig = <-sigs:
		case <-hups:
			reload(srv, log)
		}
	}
	log.Info("draining", "signal", sig.String(), "shutdown_grace", srv.Report.Config.Session.ShutdownGrace.String())
	done := make(chan error, 1)
	go func() { done <- srv.Stop(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			log.Error("stop", "error", err)
		}
		log.Info("stopped")
		return 0
	case sig := <-sigs:
		log.Error("second signal during the drain; exiting now", "signal", sig.String())
		return 1
	}
}

// startGCFloor starts the collector's heap floor (internal/gcfloor, README
// "The Go collector") unless the environment sets GOGC: then, whatever its
// value, Go obeys it alone. The floor stays under half of
// lua.heap_limit_bytes (heapLimit), whose watch would otherwise see the
// floor's garbage pass the limit and collect to check it. It returns what
// stops the floor.
func startGCFloor(getenv func(string) string, heapLimit int64) (stop func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	floor := uint64(gcHeapFloor)
	if heapLimit > 0 {
		floor = min(floor, uint64(heapLimit)/2)
	}
	return gcfloor.Start(floor, 100).Stop
}

// reload handles SIGHUP (SPEC §12): the server logs "reload ok" or
// "reload failed" with the errors. A SIGTERM meanwhile waits for it.
func reload(srv *bootstrap.Server, log *slog.Logger) {
	log.Info("SIGHUP: reloading")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = srv.Reload(ctx)
}

func newLogger(w io.Writer, c config.Log, text bool) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if text || c.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
