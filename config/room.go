package config

import (
	"fmt"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"
)

// Room is an actor's room block (docs/rooms.md §2.1): the actor is a room
// kind, each room one VM of its own created at run time. Every limit applies
// to rooms created after a reload that changes it (§2.5).
type Room struct {
	Line           int
	TickHz         int
	MaxMembers     int
	InputQueue     int           // inputs kept per member per tick
	IdleClose      time.Duration // 0: never
	ReconnectGrace time.Duration // 0: a lost connection leaves at once
	TickBudget     time.Duration // default: DefaultTickPeriods periods, at most MaxRoomTickBudget
	OnTickError    string        // close | continue
	History        int           // ticks of deltas kept for catch-up
	MaxFrameBytes  int           // of one state frame, before any base64
	MaxStateValues int
	MaxRooms       int // live rooms of this kind per node
}

// Match is the top-level match block (docs/rooms.md §2.3): the matchmaking
// queues. It is compared whole by RestartNeeded, so a reload cannot change it.
type Match struct {
	Queues []Queue
}

// Queue is one matchmaking queue, forming rooms of one kind.
type Queue struct {
	Line           int
	Name           string
	Room           string // a room kind: an actor with a room block
	MinPlayers     int
	MaxPlayers     int
	FillWait       time.Duration // 0: form at MinPlayers at once
	Interval       time.Duration
	TicketTTL      time.Duration
	ReservationTTL time.Duration
	MaxTickets     int
}

// NodeQueue is one entry of node.queues.
type NodeQueue struct {
	Line int
	Name string
}

// The defaults and limits of docs/rooms.md §2.
const (
	DefaultRoomTickHz         = 20
	MaxRoomTickHz             = 60
	DefaultRoomMaxMembers     = 16
	DefaultRoomInputQueue     = 16
	DefaultRoomIdleClose      = 30 * time.Second
	DefaultRoomReconnectGrace = 30 * time.Second
	MaxRoomTickBudget         = time.Second
	// DefaultTickPeriods is room.tick_budget left out, in tick periods
	// (500ms at 20 Hz), at most MaxRoomTickBudget.
	DefaultTickPeriods        = 10
	DefaultRoomOnTickError    = "close"
	DefaultRoomHistory        = 64
	DefaultRoomMaxFrameBytes  = 16384
	MinRoomFrameBytes         = 8192
	MaxRoomFrameBytes         = 1 << 20
	DefaultRoomMaxStateValues = 4096
	DefaultRoomMaxRooms       = 1000

	DefaultQueueMinPlayers     = 2
	DefaultQueueMaxPlayers     = 2
	DefaultQueueFillWait       = 5 * time.Second
	MaxQueueFillWait           = 10 * time.Minute
	DefaultQueueInterval       = 250 * time.Millisecond
	MaxQueueInterval           = 10 * time.Second
	DefaultQueueTicketTTL      = 60 * time.Second
	MaxQueueTicketTTL          = time.Hour
	DefaultQueueReservationTTL = 15 * time.Second
	MaxQueueReservationTTL     = 5 * time.Minute
	DefaultQueueMaxTickets     = 10000

	// MaxRoomIDBytes bounds a room id (docs/rooms.md §3.1), which travels
	// in a ClientRef and a u8-length string.
	MaxRoomIDBytes = 255
)

var onTickErrors = []string{"close", "continue"}

// synonyms maps a key other servers spell differently to Shield's, for the
// "did you mean" of an unknown key when the spelling is too far off for
// the edit distance: Nakama's match handler calls its rate tick_rate.
var synonyms = map[string]string{"tick_rate": "tick_hz"}

// queueName is the shape of a queue name: it is written in Lua
// (shield.match.enqueue("duel")) and in metric labels.
var queueName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// HasRooms reports whether the config has a room kind or a queue: only
// then does the route table hold Shield's room routes (docs/rooms.md §2.4).
func (c *Config) HasRooms() bool {
	if len(c.Match.Queues) > 0 {
		return true
	}
	for i := range c.Actors {
		if c.Actors[i].Room != nil {
			return true
		}
	}
	return false
}

// TickPeriod is the time between two ticks of a room of this kind.
func (r *Room) TickPeriod() time.Duration { return time.Second / time.Duration(r.TickHz) }

func (d *decoder) room(n *yaml.Node, w where) *Room {
	r := &Room{
		Line:           n.Line,
		TickHz:         DefaultRoomTickHz,
		MaxMembers:     DefaultRoomMaxMembers,
		InputQueue:     DefaultRoomInputQueue,
		IdleClose:      DefaultRoomIdleClose,
		ReconnectGrace: DefaultRoomReconnectGrace,
		OnTickError:    DefaultRoomOnTickError,
		History:        DefaultRoomHistory,
		MaxFrameBytes:  DefaultRoomMaxFrameBytes,
		MaxStateValues: DefaultRoomMaxStateValues,
		MaxRooms:       DefaultRoomMaxRooms,
	}
	d.mapping(n, w, "room", fields{
		"tick_hz":          d.intIn(&r.TickHz, w, "room.tick_hz", 1, MaxRoomTickHz),
		"max_members":      d.intIn(&r.MaxMembers, w, "room.max_members", 1, 1024),
		"input_queue":      d.intIn(&r.InputQueue, w, "room.input_queue", 1, 1024),
		"idle_close":       d.durationOrZero(&r.IdleClose, w, "room.idle_close"),
		"reconnect_grace":  d.durationOrZero(&r.ReconnectGrace, w, "room.reconnect_grace"),
		"tick_budget":      d.durationAtMost(&r.TickBudget, w, "room.tick_budget", MaxRoomTickBudget),
		"on_tick_error":    d.enum(&r.OnTickError, w, "room.on_tick_error", onTickErrors),
		"history":          d.intIn(&r.History, w, "room.history", 1, 1024),
		"max_frame_bytes":  d.intIn(&r.MaxFrameBytes, w, "room.max_frame_bytes", MinRoomFrameBytes, MaxRoomFrameBytes),
		"max_state_values": d.intIn(&r.MaxStateValues, w, "room.max_state_values", 1, 1_000_000),
		"max_rooms":        d.intIn(&r.MaxRooms, w, "room.max_rooms", 1, 100_000),
	})
	// The budget is a guard against a runaway room_tick (a loop that never
	// ends), not a frame budget: it is wall-clock, so a tick descheduled on
	// a busy node (GC, a full run queue) runs past its period without being
	// slow, and one period would close healthy rooms exactly when the node
	// is loaded. The cost of ticks shows as lateness and skips instead.
	if r.TickBudget == 0 {
		r.TickBudget = min(DefaultTickPeriods*r.TickPeriod(), MaxRoomTickBudget)
	}
	return r
}

func (d *decoder) match(n *yaml.Node, cfg *Config) {
	w := where{}
	d.mapping(n, w, "match", fields{
		"queues": func(v *yaml.Node) {
			d.sequence(v, w, "match.queues", func(i int, item *yaml.Node) {
				cfg.Match.Queues = append(cfg.Match.Queues, d.queue(item, i))
			})
		},
	})
}

func (d *decoder) queue(n *yaml.Node, i int) Queue {
	q := Queue{
		Line:           n.Line,
		MinPlayers:     DefaultQueueMinPlayers,
		MaxPlayers:     DefaultQueueMaxPlayers,
		FillWait:       DefaultQueueFillWait,
		Interval:       DefaultQueueInterval,
		TicketTTL:      DefaultQueueTicketTTL,
		ReservationTTL: DefaultQueueReservationTTL,
		MaxTickets:     DefaultQueueMaxTickets,
	}
	w := where{}
	path := fmt.Sprintf("match.queues[%d]", i)
	key := func(k string) string { return path + "." + k }
	given := d.mapping(n, w, path, fields{
		"name": func(v *yaml.Node) {
			var s string
			d.nonEmpty(&s, w, key("name"))(v)
			if s != "" && !queueName.MatchString(s) {
				d.errorf(v.Line, w, "%s: %q may hold only lowercase letters, digits and '_', starting with a letter", key("name"), short(s))
				return
			}
			q.Name = s
		},
		"room":        d.nonEmpty(&q.Room, w, key("room")),
		"min_players": d.intIn(&q.MinPlayers, w, key("min_players"), 1, 1024),
		"max_players": d.intIn(&q.MaxPlayers, w, key("max_players"), 1, 1024),
		"fill_wait": func(v *yaml.Node) {
			fw := q.FillWait
			d.durationOrZero(&fw, w, key("fill_wait"))(v)
			if fw > MaxQueueFillWait {
				d.errorf(v.Line, w, "%s: %s is above the limit of %s", key("fill_wait"), short(v.Value), durationText(MaxQueueFillWait))
				return
			}
			q.FillWait = fw
		},
		"interval":        d.durationAtMost(&q.Interval, w, key("interval"), MaxQueueInterval),
		"ticket_ttl":      d.durationAtMost(&q.TicketTTL, w, key("ticket_ttl"), MaxQueueTicketTTL),
		"reservation_ttl": d.durationAtMost(&q.ReservationTTL, w, key("reservation_ttl"), MaxQueueReservationTTL),
		"max_tickets":     d.intIn(&q.MaxTickets, w, key("max_tickets"), 1, 1_000_000),
	})
	if given != nil {
		d.required(given, q.Line, w, path, "name", "room")
	}
	return q
}

// nodeQueues decodes node.queues. An empty list stays non-nil: [] hosts no
// queue, while the key absent follows node.services (see Config.HostsQueue).
func (d *decoder) nodeQueues(n *yaml.Node, node *Node) {
	w := where{}
	node.QueuesLine = n.Line
	node.Queues = []NodeQueue{}
	d.sequence(n, w, "node.queues", func(_ int, item *yaml.Node) {
		if d.scalar(item, w, "node.queues", "a string", "!!str") {
			node.Queues = append(node.Queues, NodeQueue{Line: item.Line, Name: item.Value})
		}
	})
}

// HostsQueue reports whether this node runs the named queue: every queue
// without a cluster, or in a cluster when neither node.queues nor
// node.services is given; otherwise those node.queues lists.
func (c *Config) HostsQueue(name string) bool {
	if c.Cluster == nil || (c.Node.Queues == nil && c.Node.Services == nil) {
		return true
	}
	for _, q := range c.Node.Queues {
		if q.Name == name {
			return true
		}
	}
	return false
}

// stateFrameBytes is the largest frame a state frame of b bytes becomes on
// envelope env (docs/rooms.md §2.1): the binary envelopes add their header,
// the JSON ones carry the body as base64 in a JSON string with its wrapper.
func stateFrameBytes(env string, b int) int {
	if env == "lenprefix" || env == "delimiter" {
		return 4*((b+2)/3) + 80
	}
	return b + 16
}

// validateRooms runs the layer-1 checks of docs/rooms.md §2 that relate
// keys to each other: a room kind against the listeners and node.name,
// room_input routes against their owner, the queues against the room kinds,
// and node.queues against the queues.
func validateRooms(d *decoder, cfg *Config) {
	kinds := map[string]*Room{}
	for i := range cfg.Actors {
		a := &cfg.Actors[i]
		if a.Room == nil || a.Name == "" {
			continue
		}
		if _, dup := kinds[a.Name]; dup {
			continue // the duplicate name is reported
		}
		kinds[a.Name] = a.Room
		w := where{actor: a.Name}
		for _, l := range cfg.Network.Listeners {
			if need := stateFrameBytes(l.Protocol.Envelope, a.Room.MaxFrameBytes); need > l.Protocol.MaxFrameBytes {
				d.errorf(a.Room.Line, w, "room.max_frame_bytes: %d does not fit listener %q: a state frame there is up to %d bytes, above its protocol.max_frame_bytes %d",
					a.Room.MaxFrameBytes, short(l.Name), need, l.Protocol.MaxFrameBytes)
			}
		}
		// kind "/" 16 hex "@" node
		if n := len(a.Name) + 18 + len(cfg.Node.Name); n > MaxRoomIDBytes {
			d.errorf(a.Room.Line, w, "room: ids of %q rooms on node %q would be up to %d bytes, more than %d: shorten the actor's name or node.name",
				short(a.Name), short(cfg.Node.Name), n, MaxRoomIDBytes)
		}
	}
	for i := range cfg.Actors {
		a := &cfg.Actors[i]
		for j := range a.Routes {
			r := &a.Routes[j]
			if !r.RoomInput {
				continue
			}
			w := routeWhere(a.Name, r.ID, r.Name)
			if _, ok := kinds[r.OwnerService]; !ok {
				d.errorf(r.Line, w, "room_input: applies only to routes owned by a room service; owner %q has no room block", short(r.OwnerService))
			}
			if r.Direction != C2S {
				d.errorf(r.Line, w, "room_input: applies to c2s routes only, not %s", r.Direction)
			}
		}
	}
	validateQueues(d, cfg, kinds)
}

func validateQueues(d *decoder, cfg *Config, kinds map[string]*Room) {
	w := where{}
	names := map[string]int{}
	for i := range cfg.Match.Queues {
		q := &cfg.Match.Queues[i]
		path := fmt.Sprintf("match.queues[%d]", i)
		if q.Name != "" {
			if first, dup := names[q.Name]; dup {
				d.errorf(q.Line, w, "queue %q: name used twice (first at line %d)", q.Name, first)
			} else {
				names[q.Name] = q.Line
			}
		}
		if q.MinPlayers > q.MaxPlayers {
			d.errorf(q.Line, w, "%s: min_players %d is above max_players %d", path, q.MinPlayers, q.MaxPlayers)
		}
		if q.Room == "" {
			continue // required, reported by decoding
		}
		room, ok := kinds[q.Room]
		switch {
		case !ok:
			d.errorf(q.Line, w, "%s.room: %q is not a room service (an actor with a room block)", path, short(q.Room))
		case q.MaxPlayers > room.MaxMembers:
			d.errorf(q.Line, w, "%s: max_players %d is above room.max_members %d of %q", path, q.MaxPlayers, room.MaxMembers, short(q.Room))
		}
	}
	node := &cfg.Node
	if node.QueuesLine == 0 {
		return
	}
	if cfg.Cluster == nil {
		d.errorf(node.QueuesLine, w, "node.queues applies in a cluster only: without cluster this node hosts every queue")
		return
	}
	listed := map[string]int{}
	for _, q := range node.Queues {
		if _, ok := names[q.Name]; !ok {
			d.errorf(q.Line, w, "node.queues: %q is not a queue of match.queues", short(q.Name))
			continue
		}
		if first, dup := listed[q.Name]; dup {
			d.errorf(q.Line, w, "node.queues: %q listed twice (first at line %d)", short(q.Name), first)
			continue
		}
		listed[q.Name] = q.Line
	}
}

// roomRestart lists the actors of both configs whose room block was added
// or removed: that turns a service into a room kind or back, which changes
// how its VMs exist at all, so only a restart may (docs/rooms.md §2.5).
// RestartNeeded has checked that both hold the same actors in order.
func roomRestart(old, next *Config) []string {
	var out []string
	for i := range old.Actors {
		if (old.Actors[i].Room == nil) != (next.Actors[i].Room == nil) {
			out = append(out, "room of "+old.Actors[i].Name)
		}
	}
	return out
}
