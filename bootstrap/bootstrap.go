// Package bootstrap turns a configuration file into running parts, in the
// order of SPEC §2's three validation layers: config (layer 1) ->
// descriptor merge (layer 2) -> one VM per instance of every actor, each
// compiling its own routes (layer 3).
package bootstrap

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/gateway"
	"github.com/shieldrpc/shield/luavm"
)

// Report is the outcome of a successful Compile: the configuration, the
// merged route table, and every VM, open.
type Report struct {
	Config *config.Config
	Table  *descriptor.Table
	VMs    map[string][]*luavm.VM // by actor name, indexed by instance
}

// Close closes every VM.
func (r *Report) Close() {
	for _, vms := range r.VMs {
		for _, vm := range vms {
			vm.Close()
		}
	}
}

// Options tune Compile.
type Options struct {
	Logger *slog.Logger // given to every VM; nil: slog.Default()
	// Override, if set, edits the loaded config before the merge: tests
	// and examples use it to listen on port 0.
	Override func(*config.Config)
}

// Compile runs the three layers on the file at path. When layer 1 or 2
// fails it returns every error of both (as config.Errors) and spawns no VM;
// when a VM fails to compile it returns every VM's errors and closes the VMs
// it spawned.
func Compile(path string, opts Options) (*Report, error) {
	cfg, err := config.Load(path)
	var errs config.Errors
	if err != nil {
		if !errors.As(err, &errs) || cfg == nil {
			return nil, err
		}
	}
	if opts.Override != nil {
		opts.Override(cfg)
	}
	table, merrs := descriptor.Merge(cfg)
	errs = append(errs, merrs...)
	// TLS files are checked here so that `gateway check` reports a
	// missing or broken certificate, as it reports a broken script.
	for i := range cfg.Network.Listeners {
		l := &cfg.Network.Listeners[i]
		if _, err := gateway.TLSConfig(l); err != nil {
			errs = append(errs, &config.Error{File: cfg.File, Line: l.Line, Msg: fmt.Sprintf("listener %q: %v", l.Name, err)})
		}
	}
	if len(errs) > 0 {
		return nil, errs.Err()
	}
	schemas, err := SetupCodecs(cfg, table)
	if err != nil {
		return nil, err
	}
	pushCodecs := BodyCodecKeys(cfg)

	rep := &Report{Config: cfg, Table: table, VMs: make(map[string][]*luavm.VM, len(cfg.Actors))}
	for i := range cfg.Actors {
		a := &cfg.Actors[i]
		owned := table.Owned(a.Name)
		for inst := 0; inst < a.Instances; inst++ {
			vm, err := luavm.New(luavm.Spec{
				Service:        a.Name,
				Instance:       inst,
				Script:         cfg.ScriptPath(a),
				ScriptLine:     a.ScriptLine,
				ConfigFile:     cfg.File,
				Routes:         owned,
				MaxStringBytes: cfg.Lua.MaxStringBytes,
				HandlerTimeout: a.HandlerTimeout,
				MaxPending:     a.MaxPending,
				Logger:         opts.Logger,
				Schemas:        schemas,
				PushCodecs:     pushCodecs,
			})
			if err != nil {
				var verrs config.Errors
				if errors.As(err, &verrs) {
					errs = append(errs, verrs...)
				} else {
					errs = append(errs, &config.Error{File: cfg.File, Line: a.Line, Actor: a.Name, Msg: err.Error()})
				}
				break // the other instances run the same script: one report is enough
			}
			rep.VMs[a.Name] = append(rep.VMs[a.Name], vm)
		}
	}
	if len(errs) > 0 {
		rep.Close()
		return nil, errs.Err()
	}
	return rep, nil
}
