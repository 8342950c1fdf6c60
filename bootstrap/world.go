package bootstrap

import (
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/service"
)

// world is what the VMs reach outside the runtime (SPEC §11): one of each
// per runtime, shared by all its VMs, started before their init and closed
// after their stop (service.Options.Resources).
type world struct {
	http *luavm.HTTPClient // shield.http: lua.http's allow list and pooled client
}

// newWorld builds the world of cfg. Nothing in it starts yet: `gateway
// check` compiles VMs without running anything.
func newWorld(cfg *config.Config, _ Options) world {
	return world{http: luavm.NewHTTPClient(cfg.Lua.HTTP)}
}

// resources lists the world's parts in the order they start.
func (w world) resources() []service.Resource {
	return []service.Resource{w.http}
}
