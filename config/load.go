package config

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Load reads, decodes and validates (layer 1) the configuration at path.
// The returned Config is usable, as far as it decoded, even when err is not
// nil, so that layer 2 can report its own errors in the same run; err is
// then an Errors.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Errors{{File: path, Msg: fmt.Sprintf("cannot read configuration: %v", err)}}
	}
	cfg, errs := Parse(path, data)
	return cfg, errs.Err()
}

// Parse decodes and validates data as the configuration file named file.
// Relative paths inside it resolve against file's folder. It never panics.
func Parse(file string, data []byte) (*Config, Errors) {
	d := &decoder{file: file}
	cfg := Default()
	cfg.File = file
	cfg.Dir = filepath.Dir(file)

	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := yamlErrorLine(err)
		d.errs = append(d.errs, &Error{File: file, Line: line, Msg: msg})
		return &cfg, d.errs
	}
	if len(doc.Content) == 0 {
		d.errorf(0, where{}, "the file is empty")
		return &cfg, d.errs
	}
	d.root(resolve(doc.Content[0]), &cfg)
	validate(d, &cfg)
	return &cfg, d.errs
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlErrorLine splits yaml.v3's "yaml: line N: msg" into N and msg, so a
// syntax error reads "file:N: yaml: msg" like every other error.
func yamlErrorLine(err error) (int, string) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, "yaml: " + msg[len(m[0]):]
	}
	return 0, msg
}

func (d *decoder) root(n *yaml.Node, cfg *Config) {
	w := where{}
	d.mapping(n, w, "the top level", fields{
		"node": func(v *yaml.Node) {
			d.mapping(v, w, "node", fields{"name": d.nonEmpty(&cfg.Node.Name, w, "node.name")})
		},
		"network": func(v *yaml.Node) { d.network(v, cfg) },
		"log": func(v *yaml.Node) {
			d.mapping(v, w, "log", fields{
				"format": d.enum(&cfg.Log.Format, w, "log.format", logFormats),
				"level":  d.enum(&cfg.Log.Level, w, "log.level", logLevels),
			})
		},
		"lua": func(v *yaml.Node) {
			d.mapping(v, w, "lua", fields{
				"max_string_bytes": d.int64In(&cfg.Lua.MaxStringBytes, w, "lua.max_string_bytes", 1, math.MaxInt64),
				"heap_limit_bytes": d.int64In(&cfg.Lua.HeapLimitBytes, w, "lua.heap_limit_bytes", 1, math.MaxInt64),
			})
		},
		"session": func(v *yaml.Node) { d.session(v, &cfg.Session) },
		"actors": func(v *yaml.Node) {
			d.sequence(v, w, "actors", func(_ int, item *yaml.Node) {
				cfg.Actors = append(cfg.Actors, d.actor(item))
			})
		},
	})
}

func (d *decoder) network(n *yaml.Node, cfg *Config) {
	w := where{}
	net := &cfg.Network
	d.mapping(n, w, "network", fields{
		"listeners": func(v *yaml.Node) {
			d.sequence(v, w, "network.listeners", func(i int, item *yaml.Node) {
				net.Listeners = append(net.Listeners, d.listener(item, i))
			})
		},
		"schemas_dir": d.nonEmpty(&net.SchemasDir, w, "network.schemas_dir"),
		"admin": func(v *yaml.Node) {
			a := &Admin{}
			d.mapping(v, w, "network.admin", fields{
				"address": d.nonEmpty(&a.Address, w, "network.admin.address"),
				"pprof":   d.boolean(&a.PProf, w, "network.admin.pprof"),
			})
			if a.Address == "" {
				d.errorf(v.Line, w, "network.admin.address: required when admin is set")
			}
			net.Admin = a
		},
		"protocol": func(v *yaml.Node) { d.removedRoutes(v, "network.protocol") },
	})
}

// removedRoutes reports the inline route table of earlier versions with a
// message that says where routes live now.
func (d *decoder) removedRoutes(n *yaml.Node, path string) {
	d.errorf(n.Line, where{}, "%s.routes was removed: declare routes under each actor's rpc.routes", path)
}

func (d *decoder) listener(n *yaml.Node, i int) Listener {
	l := defaultListener()
	l.Line = n.Line
	w := where{}
	path := fmt.Sprintf("network.listeners[%d]", i)
	key := func(k string) string { return path + "." + k }
	d.mapping(n, w, path, fields{
		"name":              d.nonEmpty(&l.Name, w, key("name")),
		"address":           d.nonEmpty(&l.Address, w, key("address")),
		"transport":         d.enum(&l.Transport, w, key("transport"), transports),
		"path":              d.nonEmpty(&l.Path, w, key("path")),
		"allowed_origins":   d.strList(&l.AllowedOrigins, w, key("allowed_origins")),
		"handshake_timeout": d.duration(&l.HandshakeTimeout, w, key("handshake_timeout")),
		"entry_service":     d.nonEmpty(&l.EntryService, w, key("entry_service")),
		"tls": func(v *yaml.Node) {
			t := &TLS{}
			d.mapping(v, w, key("tls"), fields{
				"cert_file":      d.nonEmpty(&t.CertFile, w, key("tls.cert_file")),
				"key_file":       d.nonEmpty(&t.KeyFile, w, key("tls.key_file")),
				"client_ca_file": d.str(&t.ClientCAFile, w, key("tls.client_ca_file")),
			})
			l.TLS = t
		},
		"protocol": func(v *yaml.Node) {
			p := &l.Protocol
			d.mapping(v, w, key("protocol"), fields{
				"envelope":        d.enum(&p.Envelope, w, key("protocol.envelope"), envelopes),
				"body":            d.enum(&p.Body, w, key("protocol.body"), bodies),
				"max_frame_bytes": d.intIn(&p.MaxFrameBytes, w, key("protocol.max_frame_bytes"), MinFrameBytes, MaxFrameBytes),
				"descriptor_set":  d.nonEmpty(&p.DescriptorSet, w, key("protocol.descriptor_set")),
				"routes":          func(v *yaml.Node) { d.removedRoutes(v, key("protocol")) },
			})
		},
	})
	return l
}

// The bounds of max_frame_bytes: room for the largest header (typelen's 12
// bytes) plus a few body bytes, and at most 1 GiB so a u32 length can never
// wrap an int on any platform.
const (
	MinFrameBytes = 16
	MaxFrameBytes = 1 << 30
)

func (d *decoder) session(n *yaml.Node, s *Session) {
	w := where{}
	const big = math.MaxInt32
	burstSet := false
	d.mapping(n, w, "session", fields{
		"idle_timeout":    d.duration(&s.IdleTimeout, w, "session.idle_timeout"),
		"write_timeout":   d.duration(&s.WriteTimeout, w, "session.write_timeout"),
		"max_inflight":    d.intIn(&s.MaxInflight, w, "session.max_inflight", 1, big),
		"outbound_queue":  d.intIn(&s.OutboundQueue, w, "session.outbound_queue", 1, big),
		"duplicate_login": d.enum(&s.DuplicateLogin, w, "session.duplicate_login", duplicateLogins),
		"max_sessions":    d.intIn(&s.MaxSessions, w, "session.max_sessions", 1, big),
		"shutdown_grace":  d.duration(&s.ShutdownGrace, w, "session.shutdown_grace"),
		"rate_limit": func(v *yaml.Node) {
			d.mapping(v, w, "session.rate_limit", fields{
				"per_second": d.intIn(&s.RateLimit.PerSecond, w, "session.rate_limit.per_second", 0, big),
				"burst": func(v *yaml.Node) {
					burstSet = true
					d.intIn(&s.RateLimit.Burst, w, "session.rate_limit.burst", 1, big)(v)
				},
			})
		},
	})
	// A per_second given without a burst gets twice its rate, as the
	// defaults do (200 and 400), rather than the default rate's burst.
	if !burstSet && s.RateLimit.PerSecond != DefaultRatePerSecond {
		s.RateLimit.Burst = 2 * s.RateLimit.PerSecond
	}
}

func (d *decoder) actor(n *yaml.Node) Actor {
	a := defaultActor()
	a.Line = n.Line
	// The actor's name is needed in every message about its keys, so read
	// it before decoding the rest.
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k, v := n.Content[i], resolve(n.Content[i+1]); k.Value == "name" && v.Kind == yaml.ScalarNode {
				a.Name = v.Value
			}
		}
	}
	w := where{actor: a.Name}
	const big = math.MaxInt32
	d.mapping(n, w, "actor", fields{
		"name": d.nonEmpty(&a.Name, w, "name"),
		"script": func(v *yaml.Node) {
			a.ScriptLine = v.Line
			d.nonEmpty(&a.Script, w, "script")(v)
		},
		"instances":       d.intIn(&a.Instances, w, "instances", 1, MaxInstances),
		"mailbox":         d.intIn(&a.Mailbox, w, "mailbox", 1, big),
		"handler_timeout": d.duration(&a.HandlerTimeout, w, "handler_timeout"),
		"max_pending":     d.intIn(&a.MaxPending, w, "max_pending", 1, big),
		"rpc": func(v *yaml.Node) {
			d.mapping(v, w, "rpc", fields{
				"routes": func(v *yaml.Node) {
					d.sequence(v, w, "rpc.routes", func(_ int, item *yaml.Node) {
						a.Routes = append(a.Routes, d.route(item, a.Name))
					})
				},
			})
		},
	})
	return a
}

// MaxInstances bounds an actor's VM count: each VM is a goroutine and a Lua
// state, and sharding beyond this is a sign of a typo.
const MaxInstances = 1024

func (d *decoder) route(n *yaml.Node, actor string) Route {
	r := defaultRoute()
	r.Line = n.Line
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolve(n.Content[i+1])
			switch {
			case k.Value == "id" && v.Tag == "!!int":
				_ = v.Decode(&r.ID)
			case k.Value == "name" && v.Tag == "!!str":
				r.Name = v.Value
			}
		}
	}
	w := where{actor: actor, route: r.Label()}
	r.ID = 0 // decoded again below, with its range check
	d.mapping(n, w, "route", fields{
		"id":             d.int64In(&r.ID, w, "id", 1, MaxRouteID),
		"name":           d.nonEmpty(&r.Name, w, "name"),
		"binding":        d.nonEmpty(&r.Binding, w, "binding"),
		"owner_service":  d.nonEmpty(&r.OwnerService, w, "owner_service"),
		"requires_auth":  d.boolean(&r.RequiresAuth, w, "requires_auth"),
		"lazy_decode":    d.boolean(&r.LazyDecode, w, "lazy_decode"),
		"request_codec":  d.str(&r.RequestCodec, w, "request_codec"),
		"request_schema": d.str(&r.RequestSchema, w, "request_schema"),
		"direction": func(v *yaml.Node) {
			var s string
			d.enum(&s, w, "direction", []string{"c2s", "client_to_server", "s2c", "server_to_client", "bidi", "bidirectional"})(v)
			if dir, ok := directionNames[s]; ok {
				r.Direction = dir
			}
		},
		"action": func(v *yaml.Node) {
			var s string
			d.enum(&s, w, "action", []string{"decode_local", "forward_raw", "drop"})(v)
			if act, ok := actionNames[s]; ok {
				r.Action = act
			}
		},
	})
	if r.OwnerService == "" {
		r.OwnerService = actor
	}
	return r
}
