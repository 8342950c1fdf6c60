package bootstrap

import (
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/kv"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/service"
)

// world is what the VMs reach outside the runtime (SPEC §11): one of each
// per runtime, shared by all its VMs, started before their init and closed
// after their stop (service.Options.Resources).
type world struct {
	http *luavm.HTTPClient // shield.http: lua.http's allow list and pooled client
	kv   *kv.Store         // shield.kv; nil without storage
}

// newWorld builds the world of cfg. Nothing in it starts yet: `gateway
// check` compiles VMs without running anything.
func newWorld(cfg *config.Config, opts Options) world {
	w := world{http: luavm.NewHTTPClient(cfg.Lua.HTTP)}
	if cfg.Storage != nil {
		w.kv = kv.New(*cfg.Storage, kv.Options{Logger: opts.Logger})
	}
	return w
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
func (w world) resources() []service.Resource {
	var rs []service.Resource
	if w.kv != nil {
		rs = append(rs, w.kv)
	}
	return append(rs, w.http)
}
