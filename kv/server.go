package kv

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/shieldrpc/shield/config"
)

// defaultStartTimeout bounds the embedded server's start when ctx has no
// deadline: JetStream recovers every stream of data_dir before it is ready.
const defaultStartTimeout = 30 * time.Second

// ServerOptions sets what a NATS server embedded in this process needs to
// hold cfg's buckets: JetStream on, its files in cfg.DataDir, and a
// max_payload that carries the largest value. The store's own server
// takes them; a cluster that embeds its NATS server (cluster.embedded)
// applies them to its options too, then hands the store its connection
// (UseConn), so that a node runs one server and one connection.
func ServerOptions(opts *server.Options, cfg config.Storage) {
	opts.JetStream = true
	opts.StoreDir = cfg.DataDir
	need := headerRoom
	for _, b := range cfg.Buckets {
		need = max(need, b.MaxValueBytes+headerRoom)
	}
	opts.MaxPayload = int32(max(int(opts.MaxPayload), min(max(need, server.MAX_PAYLOAD_SIZE), maxPayload)))
}

// startServer runs the embedded NATS server of cfg (ServerOptions), with
// no port (clients connect in-process), no signal handlers (the gateway
// has its own), and its log lines in the gateway's log.
func startServer(ctx context.Context, cfg config.Storage, log *slog.Logger) (*server.Server, error) {
	dataDir := cfg.DataDir
	opts := &server.Options{ServerName: "shield-kv", DontListen: true, NoSigs: true}
	ServerOptions(opts, cfg)
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("storage: embedded NATS server: %w", err)
	}
	nl := &natsLog{log: log}
	srv.SetLoggerV2(nl, false, false, false)
	srv.Start()
	wait := defaultStartTimeout
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if !srv.ReadyForConnections(wait) || !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		if why := nl.fatal(); why != "" {
			return nil, fmt.Errorf("storage: embedded NATS server in %s: %s", dataDir, why)
		}
		return nil, fmt.Errorf("storage: embedded NATS server in %s: not ready within %v", dataDir, wait.Round(time.Millisecond))
	}
	return srv, nil
}

// natsLog writes the embedded server's log to slog: its notices (the
// start-up banner, JetStream's recovery) at debug, so that a normal start
// stays quiet, and its warnings and errors as such. A fatal error does not
// exit the process, as the server's own logger would: it is kept, and
// startServer reports it.
type natsLog struct {
	log *slog.Logger

	mu        sync.Mutex // guards lastFatal
	lastFatal string
}

func (l *natsLog) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *natsLog) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *natsLog) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l *natsLog) Debugf(format string, v ...any)  {}
func (l *natsLog) Tracef(format string, v ...any)  {}

func (l *natsLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg)
	l.mu.Lock()
	l.lastFatal = msg
	l.mu.Unlock()
}

func (l *natsLog) fatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastFatal
}

var _ server.Logger = (*natsLog)(nil)
