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
	hasJSON, hasProtobuf := false, false

	for i := range cfg.Network.Listeners {
		l := &cfg.Network.Listeners[i]
		switch l.Protocol.Body {
		case "json":
			hasJSON = true
			continue
		case "protobuf":
			hasProtobuf = true
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

	errs = append(errs, unusedSchemas(cfg, table, hasProtobuf)...)

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

// unusedSchemas reports every route whose explicit request_schema nothing
// would use, which would otherwise be skipped in silence: a JSON Schema
// applies only to requests decoded as JSON (codec.Validated), and a
// protobuf message only to the bodies a protobuf listener's codec sees
// (codec.UsesListener). A route on neither path (forward_raw, drop, s2c,
// or a request_codec other than json, without a protobuf listener that
// needs its message) names a schema for nothing.
func unusedSchemas(cfg *config.Config, table *descriptor.Table, hasProtobuf bool) config.Errors {
	var errs config.Errors
	routes := table.Routes()
	for i := range routes {
		r := &routes[i]
		if r.RequestSchema == "" || codec.Validated(r) || (hasProtobuf && codec.UsesListener(r)) {
			continue
		}
		errs = append(errs, routeError(cfg, r, fmt.Sprintf(
			"request_schema %q is never used: %s, so no schema applies to its requests; remove request_schema%s",
			r.RequestSchema, whyUnvalidated(r), unusedSchemaFix(r))))
	}
	return errs
}

// whyUnvalidated says why route r's requests are not validated.
func whyUnvalidated(r *descriptor.Route) string {
	switch {
	case !r.Direction.FromClient():
		return "the route is " + r.Direction.String() + " (clients send it no request)"
	case r.Action == config.Drop:
		return "the route's action is drop (the gateway drops its frames)"
	case r.Action == config.ForwardRaw:
		return "the route's action is forward_raw (its handler gets the raw body)"
	default:
		return fmt.Sprintf("the route's request_codec is %q (its handler gets the raw body)", r.RequestCodec)
	}
}

// unusedSchemaFix is the other way out for a route whose schema could
// apply with another setting.
func unusedSchemaFix(r *descriptor.Route) string {
	switch {
	case !r.Direction.FromClient() || r.Action == config.Drop:
		return ""
	case r.Action == config.ForwardRaw:
		return ", or use action decode_local to have requests decoded and validated"
	default:
		return ", or set request_codec to json (or leave it empty) to have requests decoded and validated"
	}
}

// routeError is a problem of route r, placed at its declaration.
func routeError(cfg *config.Config, r *descriptor.Route, msg string) *config.Error {
	file := r.File
	if file == "" {
		file = cfg.File
	}
	return &config.Error{File: file, Line: r.Line, Actor: r.Declarer, Route: r.Label(), Msg: msg}
}
