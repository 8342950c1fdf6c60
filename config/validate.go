package config

import (
	"path/filepath"
	"regexp"
	"strings"
)

// actorName is the shape of an actor name: it is written in Lua addresses
// (shield.call("room", ...)) and in metric labels, so it stays plain.
var actorName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// validate runs the layer-1 checks that relate keys to each other, after
// decoding has checked each key alone, and resolves relative paths.
func validate(d *decoder, cfg *Config) {
	actors := make(map[string]int, len(cfg.Actors))
	instances := make(map[string]int, len(cfg.Actors))
	for i := range cfg.Actors {
		a := &cfg.Actors[i]
		validateActor(d, a)
		if a.Name == "" {
			continue
		}
		if first, dup := actors[a.Name]; dup {
			d.errorf(a.Line, where{actor: a.Name}, "actor name used twice (first at line %d)", first)
			continue
		}
		actors[a.Name] = a.Line
		instances[a.Name] = a.Instances
	}
	if len(cfg.Actors) == 0 {
		d.errorf(0, where{}, "actors: at least one actor is required")
	}

	names := map[string]int{}
	addrs := map[string]int{}
	for i := range cfg.Network.Listeners {
		l := &cfg.Network.Listeners[i]
		validateListener(d, cfg, l, actors)
		if l.Name != "" {
			if first, dup := names[l.Name]; dup {
				d.errorf(l.Line, where{}, "listener %q: name used twice (first at line %d)", short(l.Name), first)
			} else {
				names[l.Name] = l.Line
			}
		}
		// Port 0 asks the OS for a free port: such listeners never clash.
		if l.Address != "" && !strings.HasSuffix(l.Address, ":0") {
			if first, dup := addrs[l.Address]; dup {
				d.errorf(l.Line, where{}, "listener %q: address %s used twice (first at line %d)", short(l.Name), short(l.Address), first)
			} else {
				addrs[l.Address] = l.Line
			}
		}
	}
	validateNode(d, cfg, instances)
	validateRooms(d, cfg)
	if cfg.Network.SchemasDir != "" {
		cfg.Network.SchemasDir = cfg.Path(cfg.Network.SchemasDir)
	}
	if cfg.Storage != nil {
		cfg.Storage.DataDir = cfg.Path(cfg.Storage.DataDir)
	}
}

// validateActor checks what decoding one key at a time cannot: the actor's
// name's shape and the uniqueness of its routes' ids and names. A missing
// name, script, id or binding was reported by decoding.
func validateActor(d *decoder, a *Actor) {
	w := where{actor: a.Name}
	if a.Name != "" && !actorName.MatchString(a.Name) {
		d.errorf(a.Line, w, "actor name %q: use letters, digits, '_', '.' and '-', starting with a letter or '_'", short(a.Name))
	}
	ids := map[int64]int{}
	names := map[string]int{}
	for i := range a.Routes {
		r := &a.Routes[i]
		w := routeWhere(a.Name, r.ID, r.Name)
		if r.ID != 0 {
			if first, dup := ids[r.ID]; dup {
				d.errorf(r.Line, w, "id %d used twice in this actor (first at line %d)", r.ID, first)
			} else {
				ids[r.ID] = r.Line
			}
		}
		if r.Name != "" {
			if first, dup := names[r.Name]; dup {
				d.errorf(r.Line, w, "name %q used twice in this actor (first at line %d)", short(r.Name), first)
			} else {
				names[r.Name] = r.Line
			}
		}
	}
}

func validateListener(d *decoder, cfg *Config, l *Listener, actors map[string]int) {
	w := where{}
	label := "listener"
	if l.Name != "" {
		label = "listener " + quote(short(l.Name))
	}
	// A missing name, address or entry_service was reported by decoding.
	if l.EntryService != "" {
		if _, ok := actors[l.EntryService]; !ok {
			d.errorf(l.Line, w, "%s: entry_service %q is not an actor", label, short(l.EntryService))
		}
	}
	if l.Transport == "ws" {
		if l.Path == "" {
			l.Path = DefaultWSPath
		}
	} else {
		if l.Path != "" {
			d.errorf(l.Line, w, "%s: path applies to transport ws only", label)
		}
		if len(l.AllowedOrigins) > 0 {
			d.errorf(l.Line, w, "%s: allowed_origins applies to transport ws only", label)
		}
	}
	if t := l.TLS; t != nil {
		// A missing cert_file or key_file was reported by decoding.
		t.CertFile, t.KeyFile = cfg.Path(t.CertFile), cfg.Path(t.KeyFile)
		if t.ClientCAFile != "" {
			t.ClientCAFile = cfg.Path(t.ClientCAFile)
		}
	}
	p := &l.Protocol
	switch {
	case p.Body == "protobuf" && p.DescriptorSet == "":
		d.errorf(l.Line, w, "%s: body protobuf needs protocol.descriptor_set", label)
	case p.Body != "protobuf" && p.DescriptorSet != "":
		d.errorf(l.Line, w, "%s: descriptor_set applies to body protobuf only", label)
	}
	if p.DescriptorSet != "" {
		p.DescriptorSet = cfg.Path(p.DescriptorSet)
	}
	if (p.Envelope == "lenprefix" || p.Envelope == "delimiter") && p.Body != "json" {
		d.errorf(l.Line, w, "%s: envelope %s carries JSON wrappers and needs body json, not %s", label, p.Envelope, p.Body)
	}
}

// Path resolves a path written in the config file against the file's folder.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Dir, p)
}

// ScriptPath is the actor's script resolved against the config's folder.
func (c *Config) ScriptPath(a *Actor) string { return c.Path(a.Script) }

// Listener returns the listener with the given name, or nil.
func (c *Config) Listener(name string) *Listener {
	for i := range c.Network.Listeners {
		if c.Network.Listeners[i].Name == name {
			return &c.Network.Listeners[i]
		}
	}
	return nil
}

// Actor returns the actor with the given name, or nil.
func (c *Config) Actor(name string) *Actor {
	for i := range c.Actors {
		if c.Actors[i].Name == name {
			return &c.Actors[i]
		}
	}
	return nil
}

func quote(s string) string { return `"` + s + `"` }
