package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/gateway"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/service"
)

// reloader is a Server's reload state (SPEC §12): what the running node
// was last built from.
type reloader struct {
	mu    sync.Mutex // one reload at a time
	path  string
	opts  Options
	cfg   *config.Config    // the config as loaded (and overridden), before fitFileLimit
	table *descriptor.Table // the table the gateway checks frames against
}

// Reload re-reads the config file and every script and runs the three
// validation layers (SPEC §12). When one fails, or the change needs a
// restart, nothing changes and the errors are returned. Otherwise every
// actor's limits and the schemas change at once, each VM of an actor
// whose script, a module it requires, its routes or its settings changed
// is replaced (service.Runtime.Reload), and the gateway takes the new
// route table. An actor whose new VMs failed to start keeps its old ones
// and its routes; the others keep their new ones, and the reload still
// fails. Reloads run one at a time; shield_reloads_total counts each.
func (s *Server) Reload(ctx context.Context) error {
	r := &s.reloader
	r.mu.Lock()
	defer r.mu.Unlock()
	err := s.reload(ctx)
	if err != nil {
		s.log.Error("reload failed", "errors", ReloadErrors(err))
		s.Metrics.Reloads.WithLabelValues("failed").Inc()
		return err
	}
	s.log.Info("reload ok")
	s.Metrics.Reloads.WithLabelValues("ok").Inc()
	return nil
}

func (s *Server) reload(ctx context.Context) error {
	r := &s.reloader
	cfg, table, err := validate(r.path, r.opts)
	if err != nil {
		return err
	}
	var refused []error
	for _, what := range config.RestartNeeded(r.cfg, cfg) {
		refused = append(refused, config.RestartError(what))
	}
	if cfg.Cluster != nil && !table.Same(r.table) {
		refused = append(refused, config.RestartError("the route table"))
	}
	// Layer 3 runs even for a refused reload, so that one answer lists
	// everything to fix.
	schemas, registerCodecs, err := prepareCodecs(cfg, table)
	if err != nil {
		return errors.Join(append(refused, err)...)
	}
	specs := actorSpecs(cfg, table, schemas, s.Report.world, r.opts) // storage and lua do not change: the same world
	vms, err := service.Compile(specs)
	if err != nil {
		return errors.Join(append(refused, err)...)
	}
	if len(refused) > 0 {
		closeVMs(vms)
		return errors.Join(refused...)
	}

	changes := make([]service.Change, len(specs))
	why := map[string]string{}
	for i := range cfg.Actors {
		a := &cfg.Actors[i]
		changes[i] = service.Change{Service: a.Name, Mailbox: a.Mailbox, HandlerTimeout: a.HandlerTimeout,
			MaxPending: a.MaxPending, Schemas: schemas}
		if a.Room != nil {
			changes[i].Kind = &specs[i]
		}
		if reason := s.differs(a.Name, vms[i], r.cfg, a); reason != "" {
			changes[i].VMs = vms[i]
			why[a.Name] = reason
			continue
		}
		closeVMs(vms[i : i+1])
	}
	registerCodecs() // the descriptor sets as re-read: network cannot change, their files may
	before := map[string]int{}
	for name := range why {
		before[name] = s.Runtime.Generation(name)
	}
	swapped, err := s.Runtime.Reload(ctx, changes)
	kept := []string{}
	for name := range why {
		if s.Runtime.Generation(name) == before[name] {
			kept = append(kept, name)
		}
	}
	for _, name := range swapped {
		s.log.Info("service reloaded", "service", name, "reason", why[name],
			"old_generation", before[name], "generation", s.Runtime.Generation(name))
	}
	if len(kept) > 0 {
		mixed, kerr := descriptor.Keep(table, r.table, kept)
		if kerr != nil {
			s.log.Warn("reload: the old route table stays", "error", kerr)
			mixed = r.table
		}
		table = mixed
	}
	s.Gateway.SetTable(table)
	if s.Cluster != nil {
		s.Cluster.SetTable(table)
	}
	r.table, r.cfg = table, cfg
	return err
}

// sameRoom reports whether room kind a has the room block it had in old
// (where it is a kind too: RestartNeeded refuses a block added or removed).
func sameRoom(old *config.Config, a *config.Actor) bool {
	for i := range old.Actors {
		if o := &old.Actors[i]; o.Name == a.Name && o.Room != nil {
			x, y := *o.Room, *a.Room
			x.Line, y.Line = 0, 0
			return reflect.DeepEqual(x, y)
		}
	}
	return false
}

// closeVMs closes the VMs a reload compiled and does not use.
func closeVMs(vms [][]*luavm.VM) {
	for _, actor := range vms {
		for _, vm := range actor {
			if vm != nil {
				vm.Close()
			}
		}
	}
}

// differs says why vms, an actor's VMs just compiled, must replace its
// running ones ("" when they need not): luavm.VM.Differs of any instance.
func (s *Server) differs(service string, vms []*luavm.VM, old *config.Config, a *config.Actor) string {
	if a.Room != nil && !sameRoom(old, a) {
		return "room"
	}
	for inst, next := range vms {
		if next == nil {
			continue
		}
		cur := s.Runtime.VM(service, inst)
		if a.Room != nil {
			cur = s.Runtime.KindVM(service) // a kind has no VM running: its compile of the last load
		}
		if cur != nil {
			if why := cur.Differs(next); why != "" {
				return why
			}
		}
	}
	return ""
}

// validate runs layers 1 and 2 on the file at path, and checks the TLS
// files (so that `gateway check` reports a missing or broken certificate
// as it reports a broken script): every error of all three, as
// config.Errors, or the config and its merged table.
func validate(path string, opts Options) (*config.Config, *descriptor.Table, error) {
	cfg, err := config.Load(path)
	var errs config.Errors
	if err != nil {
		if !errors.As(err, &errs) || cfg == nil {
			return nil, nil, err
		}
	}
	if opts.Override != nil {
		opts.Override(cfg)
	}
	table, merrs := descriptor.Merge(cfg)
	errs = append(errs, merrs...)
	for i := range cfg.Network.Listeners {
		l := &cfg.Network.Listeners[i]
		if _, err := gateway.TLSConfig(l); err != nil {
			errs = append(errs, &config.Error{File: cfg.File, Line: l.Line, Msg: fmt.Sprintf("listener %q: %v", l.Name, err)})
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs.Err()
	}
	return cfg, table, nil
}

// ReloadErrors is a failed reload's errors one by one, as /admin/reload
// and `gateway reload` list them.
func ReloadErrors(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, ReloadErrors(e)...)
		}
		return out
	}
	var errs config.Errors
	if errors.As(err, &errs) {
		out := make([]string, len(errs))
		for i, e := range errs {
			out[i] = e.Error()
		}
		return out
	}
	return []string{fmt.Sprint(err)}
}
