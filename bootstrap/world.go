package bootstrap

import (
	"context"
	"sync"
	"time"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/kv"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/service"
	"github.com/shieldrpc/shield/tracing"
)

// world is what the VMs reach outside the runtime (SPEC §11): one of each
// per runtime, shared by all its VMs, started before their init and closed
// after their stop (service.Options.Resources).
type world struct {
	http *luavm.HTTPClient // shield.http: lua.http's allow list and pooled client
	kv   *kv.Store         // shield.kv; nil without storage
	// tr is the node's tracer (docs/tracing.md), shared by the gateway
	// and every VM; nil when tracing is off.
	tr *tracing.Tracer
}

// newWorld builds the world of cfg. Nothing in it connects yet: `gateway
// check` compiles VMs without running anything (a tracer's exporter dials
// only when it has spans to send).
func newWorld(cfg *config.Config, opts Options) (world, error) {
	w := world{http: luavm.NewHTTPClient(cfg.Lua.HTTP)}
	if cfg.Storage != nil {
		w.kv = kv.New(*cfg.Storage, kv.Options{Logger: opts.Logger, Metrics: opts.Metrics})
	}
	if t := cfg.Tracing; t.Enabled {
		tr, err := tracing.New(context.Background(), tracing.Options{Endpoint: t.Endpoint, SampleRatio: t.SampleRatio,
			ServiceName: t.ServiceName, Node: cfg.Node.Name})
		if err != nil {
			return world{}, err
		}
		w.tr = tr
	}
	return w, nil
}

// tracerShutdown bounds the flush of the spans a tracer still holds when
// its runtime closes.
const tracerShutdown = 5 * time.Second

// tracerResource closes the tracer with its runtime, after the VMs (and,
// in a server, the gateway) have ended their spans: what it holds is
// exported then, within tracerShutdown.
type tracerResource struct {
	tr   *tracing.Tracer
	once sync.Once
}

func (r *tracerResource) Start(context.Context) error { return nil }

func (r *tracerResource) Close() error {
	var err error
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracerShutdown)
		defer cancel()
		err = r.tr.Shutdown(ctx)
	})
	return err
}

// store is the world's kv store as the VMs see it: a nil interface, not a
// nil *kv.Store, without storage.
func (w world) store() luavm.KV {
	if w.kv == nil {
		return nil
	}
	return w.kv
}

// resources lists the world's parts in the order they start: the store
// first, so that a start that cannot reach it fails before anything else.
// The tracer comes first, so that it closes last.
func (w world) resources() []service.Resource {
	var rs []service.Resource
	if w.tr != nil {
		rs = append(rs, &tracerResource{tr: w.tr})
	}
	if w.kv != nil {
		rs = append(rs, w.kv)
	}
	return append(rs, w.http)
}
