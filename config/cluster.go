package config

import (
	"cmp"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The keys of SPEC §10 and §11 that place a node in a cluster and give it a
// store: node.services, cluster and storage. Decoding checks each key
// alone; validateNode relates node.services to the actors and the
// listeners once every actor is known.

// natsToken is the shape of cluster.prefix and of a bucket name: one token
// of a NATS subject (no '.', '*', '>' or space), which is also a JetStream
// stream name's alphabet.
var natsToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// nodeServices decodes node.services. An empty list stays non-nil: [] hosts
// nothing, which is not the same as leaving the key out.
func (d *decoder) nodeServices(n *yaml.Node, node *Node) {
	w := where{}
	node.ServicesLine = n.Line
	if resolve(n).Kind != yaml.SequenceNode {
		d.servicesBad = true
	}
	list := []NodeService{}
	d.sequence(n, w, "node.services", func(_ int, item *yaml.Node) {
		if !d.scalar(item, w, "node.services", "a string", "!!str") {
			d.servicesBad = true
			return
		}
		s, problem := parseNodeService(item.Value)
		if problem != "" {
			d.servicesBad = true
			d.errorf(item.Line, w, "node.services: %q %s", short(item.Value), problem)
			return
		}
		s.Line = item.Line
		list = append(list, s)
	})
	node.Services = list
}

// parseNodeService reads "actor" or "actor/N", or says what is wrong with
// v. It checks the shape only: whether the actor exists and has an
// instance N is for validateNode.
func parseNodeService(v string) (NodeService, string) {
	const malformed = `is not an actor name or an instance such as "player/0"`
	name, inst, hasInst := strings.Cut(v, "/")
	if name == "" || strings.ContainsAny(name, " \t") {
		return NodeService{}, malformed
	}
	if !hasInst {
		return NodeService{Actor: name, Instance: AllInstances}, ""
	}
	if inst == "" || strings.Trim(inst, "0123456789") != "" {
		return NodeService{}, malformed
	}
	i, err := strconv.Atoi(inst)
	if err != nil {
		return NodeService{}, fmt.Sprintf("names an instance out of range (at most %d)", MaxInstances-1)
	}
	return NodeService{Actor: name, Instance: i}, ""
}

// cluster decodes the cluster mapping and checks its keys against each
// other: exactly one of nats and embedded, and a node_timeout that lets a
// node miss a heartbeat without being declared dead.
func (d *decoder) cluster(n *yaml.Node, cfg *Config) {
	w := where{}
	c := defaultCluster()
	c.Line = n.Line
	var heartbeatLine, timeoutLine int
	given := d.mapping(n, w, "cluster", fields{
		"nats":     d.natsURLs(&c.NATS, w, "cluster.nats"),
		"embedded": d.address(&c.Embedded, w, "cluster.embedded"),
		"prefix":   d.token(&c.Prefix, w, "cluster.prefix", "it is the first token of every NATS subject"),
		"heartbeat": func(v *yaml.Node) {
			heartbeatLine = v.Line
			d.duration(&c.Heartbeat, w, "cluster.heartbeat")(v)
		},
		"node_timeout": func(v *yaml.Node) {
			timeoutLine = v.Line
			d.duration(&c.NodeTimeout, w, "cluster.node_timeout")(v)
		},
	})
	cfg.Cluster = &c
	if given == nil || d.halted {
		return
	}
	nats, embedded := given.get("nats"), given.get("embedded")
	switch {
	case nats != nil && embedded != nil:
		d.errorf(max(nats.Line, embedded.Line), w, "cluster: nats and embedded are alternatives: set one of them")
	case nats == nil && embedded == nil:
		d.errorf(c.Line, w, "cluster: nats or embedded is required")
	}
	if c.NodeTimeout < 2*c.Heartbeat {
		line := cmp.Or(timeoutLine, heartbeatLine, c.Line)
		d.errorf(line, w, "cluster.node_timeout: %s must be at least twice heartbeat (%s)", durationText(c.NodeTimeout), durationText(c.Heartbeat))
	}
}

// natsSchemes are the URL schemes NATS clients dial.
var natsSchemes = []string{"nats", "tls", "ws", "wss"}

// natsURLs decodes cluster.nats: one or more comma-separated NATS URLs,
// kept as written (the form NATS clients take).
func (d *decoder) natsURLs(dst *string, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		var v string
		d.nonEmpty(&v, w, key)(n)
		if v == "" {
			return
		}
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			u, err := url.Parse(s)
			if err != nil || !slices.Contains(natsSchemes, u.Scheme) || u.Host == "" {
				d.errorf(n.Line, w, "%s: %q is not a NATS URL such as \"nats://127.0.0.1:4222\" (schemes %s)", key, short(s), strings.Join(natsSchemes, ", "))
				return
			}
		}
		*dst = v
	}
}

// token decodes a name that must be one NATS subject token; why says what
// the name is used for, in the message.
func (d *decoder) token(dst *string, w where, key, why string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		var v string
		d.nonEmpty(&v, w, key)(n)
		if v == "" {
			return
		}
		if !natsToken.MatchString(v) {
			d.errorf(n.Line, w, "%s: %q may hold only letters, digits, '_' and '-' (%s)", key, short(v), why)
			return
		}
		*dst = v
	}
}

// storage decodes the storage mapping and its buckets.
func (d *decoder) storage(n *yaml.Node, cfg *Config) {
	w := where{}
	s := defaultStorage()
	s.Line = n.Line
	d.mapping(n, w, "storage", fields{
		"data_dir": d.nonEmpty(&s.DataDir, w, "storage.data_dir"),
		"replicas": d.intIn(&s.Replicas, w, "storage.replicas", 1, MaxReplicas),
		"buckets": func(v *yaml.Node) {
			d.sequence(v, w, "storage.buckets", func(i int, item *yaml.Node) {
				s.Buckets = append(s.Buckets, d.bucket(item, i))
			})
		},
	})
	names := map[string]int{}
	for _, b := range s.Buckets {
		if b.Name == "" {
			continue // reported by decoding
		}
		if first, dup := names[b.Name]; dup {
			d.errorf(b.Line, w, "bucket %q: name used twice (first at line %d)", short(b.Name), first)
			continue
		}
		names[b.Name] = b.Line
	}
	cfg.Storage = &s
}

func (d *decoder) bucket(n *yaml.Node, i int) Bucket {
	w := where{}
	b := defaultBucket()
	b.Line = n.Line
	path := fmt.Sprintf("storage.buckets[%d]", i)
	given := d.mapping(n, w, path, fields{
		"name":            d.token(&b.Name, w, path+".name", "a JetStream bucket name"),
		"max_value_bytes": d.intIn(&b.MaxValueBytes, w, path+".max_value_bytes", 1, maxCount),
		"ttl":             d.durationOrZero(&b.TTL, w, path+".ttl"),
	})
	if given != nil {
		d.required(given, b.Line, w, path, "name")
	}
	return b
}

// maxCount bounds counts and sizes that have no natural limit of their own,
// so that they fit an int on every platform.
const maxCount = 1<<31 - 1

// validateNode checks node.services against the actors and the cluster,
// and that the node has something to do: listeners, hosted actors, or
// both. actors maps each actor name to its instances.
func validateNode(d *decoder, cfg *Config, actors map[string]int) {
	w := where{}
	node := &cfg.Node
	listeners := len(cfg.Network.Listeners) > 0
	if cfg.Cluster == nil {
		if node.ServicesLine != 0 {
			d.errorf(node.ServicesLine, w, "node.services applies in a cluster only: without cluster this node hosts every actor")
		}
		if !listeners {
			d.errorf(0, w, "network.listeners: at least one listener is required")
		}
		return
	}

	// An entry may name an actor or one of its instances, not both: the
	// overlap is a typo or a leftover, and either reading of it would hide
	// the other.
	type instance struct {
		actor string
		i     int
	}
	whole := map[string]int{}            // actor -> line of its bare entry
	one := map[instance]int{}            // actor/i -> line of its entry
	firstOne := map[string]NodeService{} // actor -> its first actor/i entry
	for _, s := range node.Services {
		n, ok := actors[s.Actor]
		switch {
		case !ok:
			d.errorf(s.Line, w, "node.services: %q is not an actor", short(s.Actor))
			continue
		case s.Instance != AllInstances && cfg.Actor(s.Actor).Room != nil:
			d.errorf(s.Line, w, "node.services: %q: %q is a room service and has no instances: list it as %q", short(s.String()), short(s.Actor), short(s.Actor))
			continue
		case s.Instance != AllInstances && s.Instance >= n:
			d.errorf(s.Line, w, "node.services: %s is out of range: actor %q has %d instance%s (0..%d)", short(s.String()), short(s.Actor), n, plural(n), n-1)
			continue
		}
		if s.Instance == AllInstances {
			if line, dup := whole[s.Actor]; dup {
				d.errorf(s.Line, w, "node.services: %q listed twice (first at line %d)", short(s.Actor), line)
			} else if o, dup := firstOne[s.Actor]; dup {
				d.errorf(s.Line, w, "node.services: %q covers %q (line %d): list one of them", short(s.Actor), short(o.String()), o.Line)
			} else {
				whole[s.Actor] = s.Line
			}
			continue
		}
		k := instance{s.Actor, s.Instance}
		if line, dup := one[k]; dup {
			d.errorf(s.Line, w, "node.services: %q listed twice (first at line %d)", short(s.String()), line)
		} else if line, dup := whole[s.Actor]; dup {
			d.errorf(s.Line, w, "node.services: %q is already hosted through %q (line %d)", short(s.String()), short(s.Actor), line)
		} else {
			one[k] = s.Line
			if _, seen := firstOne[s.Actor]; !seen {
				firstOne[s.Actor] = s
			}
		}
	}
	if !listeners && node.Services != nil && len(node.Services) == 0 && !d.servicesBad {
		d.errorf(node.ServicesLine, w, "node: no network.listeners and node.services is []: the node would neither serve clients nor host an actor")
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Hosts reports whether this node runs VM instance (0-based) of actor.
// Without a cluster, and in a cluster without node.services, a node hosts
// every instance of every actor; with node.services, those it names. An
// actor that does not exist, or an instance out of its range, is never
// hosted.
func (c *Config) Hosts(actor string, instance int) bool {
	a := c.Actor(actor)
	if a == nil || instance < 0 || instance >= a.Instances {
		return false
	}
	return c.hosts(actor, instance)
}

// hosts is Hosts for an instance known to exist.
func (c *Config) hosts(actor string, instance int) bool {
	if c.Node.Services == nil {
		return true
	}
	for _, s := range c.Node.Services {
		if s.Actor == actor && (s.Instance == AllInstances || s.Instance == instance) {
			return true
		}
	}
	return false
}

// HostedInstances returns the instances of actor this node runs, in
// order: all of them, some, or none (nil, as for an unknown actor).
func (c *Config) HostedInstances(actor string) []int {
	a := c.Actor(actor)
	if a == nil {
		return nil
	}
	var out []int
	for i := range a.Instances {
		if c.hosts(actor, i) {
			out = append(out, i)
		}
	}
	return out
}
