package bootstrap

import (
	"errors"
	"fmt"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// SetupCodecs prepares what the VMs need to decode request bodies and
// encode answers and pushes (SPEC §2, §6, §8), after the merge and before
// any VM serves:
//
//   - every protobuf listener's descriptor set is loaded (once per file,
//     however many listeners share it) and every route's message
//     (request_schema, else its name) is resolved in it; the codec is then
//     registered under the listener's key, config.Listener.BodyCodecKey
//     ("protobuf/<listener>"), which its ClientIngress.Codec carries;
//   - with network.schemas_dir and at least one json listener, the routes'
//     JSON Schemas are compiled. A nil *codec.Schemas (no schemas_dir, or
//     no json listener) validates nothing.
//
// Routes are global (any session may send any route, whatever its
// listener), so each protobuf listener must resolve every route that uses
// its codec: all of them except drop routes and client-to-server
// forward_raw routes, whose bodies the codec never sees.
//
// Every problem is returned, as config.Errors with the config's file and
// the route's line, and then nothing is registered.
func SetupCodecs(cfg *config.Config, table *descriptor.Table) (*codec.Schemas, error) {
	schemas, register, err := prepareCodecs(cfg, table)
	if err != nil {
		return nil, err
	}
	register()
	return schemas, nil
}

// prepareCodecs is SetupCodecs without the registration, which it returns
// for later: a reload registers the codecs only once it goes ahead.
func prepareCodecs(cfg *config.Config, table *descriptor.Table) (*codec.Schemas, func(), error) {
	var errs config.Errors
	var regs []*codec.Protobuf             // registered once everything checked out
	loaded := map[string]*codec.Protobuf{} // by descriptor set path
	broken := map[string]bool{}            // sets that failed to load, reported once
	resolved := map[string]bool{}          // sets whose routes were checked, reported once
	hasJSON := false

	for i := range cfg.Network.Listeners {
		l := &cfg.Network.Listeners[i]
		switch l.Protocol.Body {
		case "json":
			hasJSON = true
			continue
		case "protobuf":
		default:
			continue // raw: registered by package codec
		}
		path := l.Protocol.DescriptorSet
		if broken[path] {
			continue
		}
		p, ok := loaded[path]
		if !ok {
			var err error
			if p, err = codec.NewProtobuf(path); err != nil {
				broken[path] = true
				errs = append(errs, &config.Error{File: cfg.File, Line: l.Line,
					Msg: fmt.Sprintf("listener %q: %v", l.Name, err)})
				continue
			}
			loaded[path] = p
		}
		if !resolved[path] {
			resolved[path] = true
			errs = append(errs, resolveMessages(cfg, l, p, table)...)
		}
		regs = append(regs, p.WithName(l.BodyCodecKey()))
	}

	var schemas *codec.Schemas
	if cfg.Network.SchemasDir != "" && hasJSON {
		s, err := codec.NewSchemas(cfg.Network.SchemasDir, table.Routes())
		var serrs codec.SchemaErrors
		switch {
		case errors.As(err, &serrs):
			for _, e := range serrs {
				errs = append(errs, routeError(cfg, e.Route, fmt.Sprintf("request schema %s: %v", e.File, e.Err)))
			}
		case err != nil:
			errs = append(errs, &config.Error{File: cfg.File, Msg: fmt.Sprintf("network.schemas_dir: %v", err)})
		default:
			schemas = s
		}
	}

	if len(errs) > 0 {
		return nil, nil, errs.Err()
	}
	return schemas, func() {
		for _, p := range regs {
			codec.Register(p)
		}
	}, nil
}

// resolveMessages checks that every route using l's codec has its message
// in the descriptor set.
func resolveMessages(cfg *config.Config, l *config.Listener, p *codec.Protobuf, table *descriptor.Table) config.Errors {
	var errs config.Errors
	routes := table.Routes()
	for i := range routes {
		r := &routes[i]
		if !codec.UsesListener(r) {
			continue
		}
		name := codec.SchemaName(r)
		if name == "" {
			errs = append(errs, routeError(cfg, r, fmt.Sprintf(
				"listener %q has body protobuf: the route needs a name or a request_schema naming its message in %s",
				l.Name, p.Source())))
			continue
		}
		if err := p.Resolve(name); err != nil {
			errs = append(errs, routeError(cfg, r, fmt.Sprintf(
				"listener %q has body protobuf: message %q is not in descriptor set %s",
				l.Name, name, p.Source())))
		}
	}
	return errs
}

// routeError is a problem of route r, placed at its declaration.
func routeError(cfg *config.Config, r *descriptor.Route, msg string) *config.Error {
	file := r.File
	if file == "" {
		file = cfg.File
	}
	return &config.Error{File: file, Line: r.Line, Actor: r.Declarer, Route: r.Label(), Msg: msg}
}
