// Package bootstrap turns a configuration file into running parts, in the
// order of SPEC §2's three validation layers: config (layer 1) ->
// descriptor merge (layer 2) -> one VM per instance of every actor, each
// compiling its own routes (layer 3).
package bootstrap

import (
	"log/slog"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/kv"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/service"
)

// Report is the outcome of a successful Compile: the configuration, the
// merged route table, and the service runtime with every VM compiled but
// not started.
type Report struct {
	Config  *config.Config
	Table   *descriptor.Table
	Runtime *service.Runtime
	// Schemas are the JSON Schemas routes are validated against; nil
	// without network.schemas_dir (or without a json listener).
	Schemas *codec.Schemas
	// KV is shield.kv's store (nil without storage), a resource of the
	// runtime: it starts with it, embedding a NATS server unless given a
	// connection first (KV.UseConn, for a cluster's) before Start.
	KV *kv.Store
	// world is what the VMs reach outside the runtime, shared by the
	// VMs a reload makes.
	world world
}

// Close releases the VMs of a runtime that was never started.
func (r *Report) Close() { r.Runtime.Close() }

// Options tune Compile.
type Options struct {
	Logger *slog.Logger // given to every VM; nil: slog.Default()
	// Override, if set, edits the loaded config before the merge: tests
	// and examples use it to listen on port 0.
	Override func(*config.Config)
	// Metrics counts the runtime's events; nil: none (Start gives its own).
	Metrics *metrics.Metrics
	// OnFatal, in a cluster, runs when the node finds it was declared dead
	// (SPEC §10); nil: log and exit with status 1. Tests running several
	// nodes in one process set it.
	OnFatal func(error)
}

// Compile runs the three layers on the file at path. When layer 1 or 2
// fails it returns every error of both (as config.Errors) and spawns no VM;
// when a VM fails to compile it returns every VM's errors and closes the VMs
// it spawned.
func Compile(path string, opts Options) (*Report, error) {
	cfg, table, err := validate(path, opts)
	if err != nil {
		return nil, err
	}
	schemas, err := SetupCodecs(cfg, table)
	if err != nil {
		return nil, err
	}
	w, err := newWorld(cfg, opts)
	if err != nil {
		return nil, err
	}
	res := w.resources()
	ropts := service.Options{Logger: opts.Logger, HeapLimitBytes: cfg.Lua.HeapLimitBytes, Resources: res,
		ControlLimit: cfg.Session.MaxSessions, Node: cfg.Node.Name}
	if opts.Metrics != nil {
		ropts.Metrics = opts.Metrics
	}
	for _, q := range cfg.Match.Queues {
		if cfg.HostsQueue(q.Name) {
			spec := service.Queue{Config: q}
			if opts.Metrics != nil {
				spec.Metrics = opts.Metrics.Queue(q.Name)
			}
			ropts.Queues = append(ropts.Queues, spec)
		}
	}
	rt, err := service.New(actorSpecs(cfg, table, schemas, w, opts), ropts)
	if err != nil {
		if w.tr != nil {
			_ = res[0].Close() // the tracer's exporter goroutine
		}
		return nil, err
	}
	return &Report{Config: cfg, Table: table, Runtime: rt, Schemas: schemas, KV: w.kv, world: w}, nil
}

// actorSpecs is what the runtime needs to spawn every VM of every actor,
// from the config (where the defaults live) and the merged table.
func actorSpecs(cfg *config.Config, table *descriptor.Table, schemas *codec.Schemas, w world, opts Options) []service.Actor {
	pushCodecs := cfg.BodyCodecKeys()
	actors := make([]service.Actor, 0, len(cfg.Actors))
	var roomRoutes []descriptor.Route // the reserved routes, in a config with rooms
	for _, r := range table.Routes() {
		if r.IsRoomRoute() {
			roomRoutes = append(roomRoutes, r)
		}
	}
	for i := range cfg.Actors {
		a := &cfg.Actors[i]
		owned := table.Owned(a.Name)
		pushOwners := map[string]string{}
		for _, r := range table.Routes() {
			if r.Direction.ToClient() && r.Owner != a.Name {
				pushOwners[r.Binding] = r.Owner
			}
		}
		// In a cluster a node compiles only the VMs it hosts (SPEC §10);
		// the others are the cluster's to reach.
		sa := service.Actor{Name: a.Name, Mailbox: a.Mailbox, Instances: a.Instances, Room: a.Room}
		for _, inst := range cfg.HostedInstances(a.Name) {
			spec := luavm.Spec{
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
				Settings:       a.Settings,
				PushOwners:     pushOwners,
				HTTP:           w.http,
				KV:             w.store(),
				Tracer:         w.tr,
				RoomRoutes:     roomRoutes,
			}
			if a.Room != nil {
				spec.Room = &luavm.RoomSpec{Config: *a.Room}
				if opts.Metrics != nil {
					spec.Room.Metrics = opts.Metrics.Room(a.Name)
				}
			}
			if m := opts.Metrics; m != nil {
				c := m.IncidentsNotLogged.WithLabelValues(a.Name)
				spec.Suppressed = c.Inc
			}
			sa.VMs = append(sa.VMs, spec)
		}
		actors = append(actors, sa)
	}
	return actors
}
