package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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
// The errors come sorted by line.
func Parse(file string, data []byte) (*Config, Errors) {
	d := &decoder{file: file, budget: workBudget(len(data))}
	cfg := Default()
	cfg.File = file
	cfg.Dir = filepath.Dir(file)

	root, err := parseYAML(data)
	switch {
	case err != nil:
		line, msg := yamlErrorLine(err, data)
		d.errs = append(d.errs, &Error{File: file, Line: line, Msg: msg})
		return &cfg, d.errs
	case isNull(root):
		d.errorf(0, where{}, "the file is empty")
		return &cfg, d.errs
	}
	// A walk stopped by the alias budget left the config half decoded:
	// validating it would only add noise to the one error that matters.
	// Its actors are dropped too, so that layer 2 does not merge millions
	// of aliased routes either.
	if d.root(resolve(root), &cfg) && !d.halted {
		validate(d, &cfg)
	}
	if d.halted {
		cfg.Actors, cfg.Network.Listeners = nil, nil
	}
	d.errs.Sort()
	return &cfg, d.errs
}

// workBudget is how many keys and items a file of size n may expand to:
// far more than a file without aliases can hold (each value takes at least
// a few bytes), far less than a billion.
func workBudget(n int) int { return 10_000 + 16*n }

// parseYAML parses data into a node tree. A configuration is exactly one
// YAML document: a second one would be ignored by the decoder, and
// ignoring what the operator wrote is what strict decoding exists to
// prevent. It returns nil for a file without a document.
func parseYAML(data []byte) (root *yaml.Node, err error) {
	// yaml.v3 panics (rather than failing) on a few malformed inputs; a
	// configuration error must never crash the process that reads it.
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("yaml: cannot parse the file: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, err
	default:
		return nil, fmt.Errorf("yaml: line %d: a second YAML document: the configuration is one document (remove the extra ---)", next.Line)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

var (
	yamlLine      = regexp.MustCompile(`^yaml: line (\d+): `)
	unknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// yamlParserProblems are the messages of yaml.v3's parser, as opposed to its
// scanner. yaml.v3 reports the line of a scanner error 1-based but the line
// of a parser error 0-based (one too low), so the two must be told apart to
// name the right line. The sets of messages do not overlap.
var yamlParserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
	"found undefined tag handle",
}

// yamlErrorLine splits yaml.v3's "yaml: line N: msg" into the 1-based line
// and "yaml: msg", so a syntax error reads "file:N: yaml: msg" like every
// other error. The line is 0 when the error has none.
func yamlErrorLine(err error, data []byte) (int, string) {
	msg := err.Error()
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		if a := unknownAnchor.FindStringSubmatch(msg); a != nil {
			return aliasLine(data, a[1]), msg
		}
		if l := badCharLine(data); l > 0 {
			return l, msg // a reader error: a control character or bad UTF-8
		}
		if slices.Contains(yamlParserProblems, strings.TrimPrefix(msg, "yaml: ")) {
			return 1, msg // both marks on the first line
		}
		return 0, msg
	}
	n, _ := strconv.Atoi(m[1])
	rest := msg[len(m[0]):]
	if slices.Contains(yamlParserProblems, rest) {
		n++
	}
	// A problem found at the end of the input is marked on the line after
	// the last one; name the last line instead.
	return min(n, lineCount(data)), "yaml: " + rest
}

// lineCount is the number of lines of data as YAML counts them, the last
// one counted whether or not it ends with a line break.
func lineCount(data []byte) int {
	n := lineOf(data, len(data))
	if len(data) > 0 && lineOf(data, len(data)-1) < n {
		n-- // data ends with a line break: no line after it
	}
	return n
}

// lineOf returns the 1-based line of byte offset off in data, counting the
// line breaks YAML counts: \n, \r\n, a lone \r, NEL, LS and PS.
func lineOf(data []byte, off int) int {
	line := 1
	for i := 0; i < off && i < len(data); i++ {
		switch c := data[i]; {
		case c == '\n':
			line++
		case c == '\r':
			if i+1 >= len(data) || data[i+1] != '\n' {
				line++
			}
		case c == 0xc2 && i+1 < len(data) && data[i+1] == 0x85:
			line++
			i++
		case c == 0xe2 && i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xa8 || data[i+2] == 0xa9):
			line++
			i += 2
		}
	}
	return line
}

// badCharLine returns the line of the first character YAML does not allow
// in a UTF-8 file (a control character, a surrogate, or a byte that is not
// UTF-8), or 0 when there is none: yaml.v3's reader errors have no line.
func badCharLine(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return lineOf(data, i)
		case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		case r >= 0x20 && r <= 0x7e:
		case r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000:
		default:
			return lineOf(data, i)
		}
		i += size
	}
	return 0
}

// aliasLine returns the line of the first "*name" in data, or 0: yaml.v3
// does not say where an alias to an unknown anchor is.
func aliasLine(data []byte, name string) int {
	i := bytes.Index(data, []byte("*"+name))
	if i < 0 {
		return 0
	}
	return lineOf(data, i)
}

// root decodes the top-level mapping. It reports false when the file is
// not a mapping at all, so that validation does not pile on messages about
// everything missing.
func (d *decoder) root(n *yaml.Node, cfg *Config) bool {
	w := where{}
	return d.mapping(n, w, "the top level", fields{
		"node": func(v *yaml.Node) {
			d.mapping(v, w, "node", fields{
				"name":     d.nonEmpty(&cfg.Node.Name, w, "node.name"),
				"services": func(v *yaml.Node) { d.nodeServices(v, &cfg.Node) },
				"queues":   func(v *yaml.Node) { d.nodeQueues(v, &cfg.Node) },
			})
		},
		"cluster": func(v *yaml.Node) { d.cluster(v, cfg) },
		"storage": func(v *yaml.Node) { d.storage(v, cfg) },
		"network": func(v *yaml.Node) { d.network(v, cfg) },
		"log": func(v *yaml.Node) {
			d.mapping(v, w, "log", fields{
				"format": d.enum(&cfg.Log.Format, w, "log.format", logFormats),
				"level":  d.enum(&cfg.Log.Level, w, "log.level", logLevels),
			})
		},
		"tracing": func(v *yaml.Node) { d.tracing(v, &cfg.Tracing) },
		"lua": func(v *yaml.Node) {
			d.mapping(v, w, "lua", fields{
				"max_string_bytes": d.int64In(&cfg.Lua.MaxStringBytes, w, "lua.max_string_bytes", 1, math.MaxInt64),
				"heap_limit_bytes": d.int64In(&cfg.Lua.HeapLimitBytes, w, "lua.heap_limit_bytes", 1, math.MaxInt64),
				"http": func(v *yaml.Node) {
					h := &cfg.Lua.HTTP
					d.mapping(v, w, "lua.http", fields{
						"allow":              d.hostPorts(&h.Allow, w, "lua.http.allow"),
						"timeout":            d.duration(&h.Timeout, w, "lua.http.timeout"),
						"max_response_bytes": d.int64In(&h.MaxResponseBytes, w, "lua.http.max_response_bytes", 1, math.MaxInt64),
					})
				},
			})
		},
		"session": func(v *yaml.Node) { d.session(v, &cfg.Session) },
		"match":   func(v *yaml.Node) { d.match(v, cfg) },
		"actors": func(v *yaml.Node) {
			d.sequence(v, w, "actors", func(_ int, item *yaml.Node) {
				cfg.Actors = append(cfg.Actors, d.actor(item))
			})
		},
	}) != nil
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
			a := defaultAdmin()
			given := d.mapping(v, w, "network.admin", fields{
				"address": d.address(&a.Address, w, "network.admin.address"),
				"pprof":   d.boolean(&a.PProf, w, "network.admin.pprof"),
				"play":    d.boolean(&a.Play, w, "network.admin.play"),
				"token":   d.adminToken(&a.Token, w, "network.admin.token"),
			})
			if given != nil && !given.has("address") && !d.halted {
				d.errorf(v.Line, w, "network.admin.address: required when admin is set")
			}
			net.Admin = &a
		},
		// network.protocol held the inline route table of earlier
		// versions; the wire profile is now set on each listener.
		"protocol": func(v *yaml.Node) {
			if !d.removedRoutes(v, "network.protocol") {
				d.errorf(v.Line, w, "network.protocol was removed: set envelope and body on each listener's protocol")
			}
		},
	})
}

// removedRoutes reports the inline route table of earlier versions (a
// "routes" key in mapping n) with a message that says where routes live
// now. It reports whether there was one.
func (d *decoder) removedRoutes(n *yaml.Node, path string) bool {
	k, _ := d.lookup(n, "routes")
	if k == nil {
		return false
	}
	d.errorf(k.Line, where{}, "%s.routes was removed: declare routes under each actor's rpc.routes", path)
	return true
}

func (d *decoder) listener(n *yaml.Node, i int) Listener {
	l := defaultListener()
	l.Line = n.Line
	w := where{}
	path := fmt.Sprintf("network.listeners[%d]", i)
	key := func(k string) string { return path + "." + k }
	given := d.mapping(n, w, path, fields{
		"name":              d.nonEmpty(&l.Name, w, key("name")),
		"address":           d.address(&l.Address, w, key("address")),
		"transport":         d.enum(&l.Transport, w, key("transport"), transports),
		"path":              d.urlPath(&l.Path, w, key("path")),
		"allowed_origins":   d.strList(&l.AllowedOrigins, w, key("allowed_origins")),
		"handshake_timeout": d.duration(&l.HandshakeTimeout, w, key("handshake_timeout")),
		"entry_service":     d.nonEmpty(&l.EntryService, w, key("entry_service")),
		"tls": func(v *yaml.Node) {
			t := &TLS{}
			given := d.mapping(v, w, key("tls"), fields{
				"cert_file":      d.nonEmpty(&t.CertFile, w, key("tls.cert_file")),
				"key_file":       d.nonEmpty(&t.KeyFile, w, key("tls.key_file")),
				"client_ca_file": d.str(&t.ClientCAFile, w, key("tls.client_ca_file")),
			})
			if given != nil {
				d.required(given, v.Line, w, key("tls"), "cert_file", "key_file")
			}
			l.TLS = t
		},
		"protocol": func(v *yaml.Node) {
			p := &l.Protocol
			d.removedRoutes(v, key("protocol"))
			d.mapping(v, w, key("protocol"), fields{
				"envelope":        d.enum(&p.Envelope, w, key("protocol.envelope"), envelopes),
				"body":            d.enum(&p.Body, w, key("protocol.body"), bodies),
				"max_frame_bytes": d.intIn(&p.MaxFrameBytes, w, key("protocol.max_frame_bytes"), MinFrameBytes, MaxFrameBytes),
				"descriptor_set":  d.nonEmpty(&p.DescriptorSet, w, key("protocol.descriptor_set")),
				"routes":          func(*yaml.Node) {}, // reported by removedRoutes, null or not
			})
		},
	})
	if given != nil {
		d.required(given, l.Line, w, path, "name", "address", "entry_service")
	}
	return l
}

// required reports each of keys that a mapping (at line) did not give a
// value, prefixed with path when there is one. A key given a bad value is
// not reported again: decoding did.
func (d *decoder) required(given *keySet, line int, w where, path string, keys ...string) {
	if d.halted {
		return // the walk stopped part way through the mapping
	}
	if path != "" {
		path += ": "
	}
	for _, k := range keys {
		if !given.has(k) {
			d.errorf(line, w, "%s%s is required", path, k)
		}
	}
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
	burstSet, burstLine := false, 0
	d.mapping(n, w, "session", fields{
		"idle_timeout":    d.duration(&s.IdleTimeout, w, "session.idle_timeout"),
		"write_timeout":   d.duration(&s.WriteTimeout, w, "session.write_timeout"),
		"max_inflight":    d.intIn(&s.MaxInflight, w, "session.max_inflight", 1, big),
		"outbound_queue":  d.intIn(&s.OutboundQueue, w, "session.outbound_queue", 1, big),
		"duplicate_login": d.enum(&s.DuplicateLogin, w, "session.duplicate_login", duplicateLogins),
		"max_sessions":    d.intIn(&s.MaxSessions, w, "session.max_sessions", 1, big),
		"shutdown_grace":  d.duration(&s.ShutdownGrace, w, "session.shutdown_grace"),

		"outbound_queue_bytes": d.intIn(&s.OutboundQueueBytes, w, "session.outbound_queue_bytes", 1, big),
		"auth_max_frame_bytes": d.authFrameBytes(&s.AuthMaxFrameBytes, w, "session.auth_max_frame_bytes"),
		"auth_timeout":         d.durationOrZero(&s.AuthTimeout, w, "session.auth_timeout"),
		"resume_window":        d.durationOrZero(&s.ResumeWindow, w, "session.resume_window"),
		"retry_hints":          d.boolean(&s.RetryHints, w, "session.retry_hints"),
		"rate_limit": func(v *yaml.Node) {
			d.mapping(v, w, "session.rate_limit", fields{
				"per_second": d.intIn(&s.RateLimit.PerSecond, w, "session.rate_limit.per_second", 0, big),
				"burst": func(v *yaml.Node) {
					burstSet = true
					burstLine = v.Line
					d.intIn(&s.RateLimit.Burst, w, "session.rate_limit.burst", 0, big)(v)
				},
			})
		},
	})
	switch {
	case !burstSet && s.RateLimit.PerSecond != DefaultRatePerSecond:
		// A per_second given without a burst gets twice its rate, as the
		// defaults do (200 and 400), rather than the default rate's burst.
		s.RateLimit.Burst = 2 * s.RateLimit.PerSecond
	case burstSet && s.RateLimit.Burst == 0 && s.RateLimit.PerSecond != 0:
		// 0 means "off" for the pair; a burst of 0 under a rate would
		// refuse every frame.
		d.errorf(burstLine, w, "session.rate_limit.burst: 0 is allowed only with per_second 0 (no limit); per_second is %d", s.RateLimit.PerSecond)
	}
}

// hostPorts decodes a list of "host:port" pairs to connect to: unlike a
// listen address, each needs a host and a numeric port 1..65535, since it
// is compared with the host and port of a URL.
func (d *decoder) hostPorts(dst *[]string, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		d.sequence(n, w, key, func(_ int, item *yaml.Node) {
			if !d.scalar(item, w, key, "a string", "!!str") {
				return
			}
			v := item.Value
			host, port, err := net.SplitHostPort(v)
			switch {
			case err != nil:
				d.errorf(item.Line, w, "%s: %q is not host:port (such as \"api.example.com:443\")", key, short(v))
				return
			case host == "":
				d.errorf(item.Line, w, "%s: %q has no host", key, short(v))
				return
			}
			if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || port[0] == '+' {
				d.errorf(item.Line, w, "%s: %q: the port must be a number 1..65535", key, short(v))
				return
			}
			*dst = append(*dst, v)
		})
	}
}

// authFrameBytes decodes session.auth_max_frame_bytes: 0 (the listener's
// max_frame_bytes), or a cap in the range of max_frame_bytes.
func (d *decoder) authFrameBytes(dst *int, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if !d.scalar(n, w, key, "an integer", "!!int") {
			return
		}
		v, err := intValue(n)
		if err != nil || (v != 0 && (v < MinFrameBytes || v > MaxFrameBytes)) {
			d.errorf(n.Line, w, "%s: %s is out of range: 0 (the listener's max_frame_bytes) or %d..%d", key, short(n.Value), MinFrameBytes, MaxFrameBytes)
			return
		}
		*dst = int(v)
	}
}

// adminToken decodes network.admin.token. A token travels in an
// Authorization header, which cannot carry control characters and loses
// spaces at its ends; such a token could never match, so it is refused
// rather than locking the operators out in silence.
func (d *decoder) adminToken(dst *string, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		var v string
		d.str(&v, w, key)(n)
		for _, r := range v {
			if r < 0x21 || r == 0x7f {
				d.errorf(n.Line, w, "%s: must not hold spaces or control characters", key)
				return
			}
		}
		*dst = v
	}
}

func (d *decoder) actor(n *yaml.Node) Actor {
	a := defaultActor()
	a.Line = n.Line
	// The actor's name is needed in every message about its keys, so read
	// it before decoding the rest.
	if _, v := d.lookup(n, "name"); v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		a.Name = v.Value
	}
	w := where{actor: a.Name}
	const big = math.MaxInt32
	given := d.mapping(n, w, "actor", fields{
		"name": d.nonEmpty(&a.Name, w, "name"),
		"script": func(v *yaml.Node) {
			a.ScriptLine = v.Line
			d.nonEmpty(&a.Script, w, "script")(v)
		},
		"instances":       d.intIn(&a.Instances, w, "instances", 1, MaxInstances),
		"mailbox":         d.intIn(&a.Mailbox, w, "mailbox", 1, big),
		"handler_timeout": d.durationAtMost(&a.HandlerTimeout, w, "handler_timeout", MaxHandlerTimeout),
		"max_pending":     d.intIn(&a.MaxPending, w, "max_pending", 1, big),
		"settings":        func(v *yaml.Node) { a.Settings = d.settings(v, w) },
		"room":            func(v *yaml.Node) { a.Room = d.room(v, w) },
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
	if given != nil {
		prefix := "" // the message names the actor
		if a.Name == "" {
			prefix = "actor"
		}
		d.required(given, a.Line, w, prefix, "name", "script")
		if a.Room != nil && given.has("instances") {
			d.errorf(a.Line, w, "instances: a room service runs one VM per room: leave instances out")
		}
	}
	return a
}

// MaxInstances bounds an actor's VM count: each VM is a goroutine and a Lua
// state, and sharding beyond this is a sign of a typo.
const MaxInstances = 1024

func (d *decoder) route(n *yaml.Node, actor string) Route {
	r := defaultRoute()
	r.Line = n.Line
	// The id and name label every message about the route's keys: read
	// them first. The id is decoded again below, with its range check.
	var id int64
	if _, v := d.lookup(n, "id"); v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!int" {
		id, _ = intValue(v) // out of int64: the label has no id, decoding reports it
	}
	var name string
	if _, v := d.lookup(n, "name"); v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		name = short(v.Value)
	}
	w := routeWhere(actor, id, name)
	given := d.mapping(n, w, "route", fields{
		"id":             d.int64In(&r.ID, w, "id", 1, MaxRouteID),
		"name":           d.nonEmpty(&r.Name, w, "name"),
		"binding":        d.nonEmpty(&r.Binding, w, "binding"),
		"owner_service":  d.nonEmpty(&r.OwnerService, w, "owner_service"),
		"requires_auth":  d.boolean(&r.RequiresAuth, w, "requires_auth"),
		"lazy_decode":    d.boolean(&r.LazyDecode, w, "lazy_decode"),
		"request_codec":  d.str(&r.RequestCodec, w, "request_codec"),
		"request_schema": d.str(&r.RequestSchema, w, "request_schema"),
		"room_input":     d.boolean(&r.RoomInput, w, "room_input"),
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
	if given != nil {
		d.required(given, r.Line, w, "", "id") // the message names the route
		switch {
		case r.RoomInput && given.has("binding"):
			d.errorf(r.Line, w, "binding: a room_input route has no handler: leave binding out")
		case !r.RoomInput:
			d.required(given, r.Line, w, "", "binding")
		}
	}
	if r.OwnerService == "" {
		r.OwnerService = actor
	}
	return r
}
