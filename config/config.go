// Package config decodes and validates Shield's configuration file
// (SPEC.md §2): strict YAML decoding in which an unknown key is an error,
// defaults filled from one place, and the layer-1 checks that need nothing but
// the file itself. Every problem carries its file and line, and the actor and
// route it concerns.
//
// Layer 2 (the merge of every actor's routes) lives in package descriptor and
// layer 3 (compiling bindings in each VM) in package luavm.
package config

import "time"

// Config is a decoded, defaulted configuration. It is plain data: after Load
// returns, nothing changes it.
type Config struct {
	File    string // the path the config was loaded from, as given
	Dir     string // the folder relative paths inside the file resolve against
	Node    Node
	Network Network
	Log     Log
	Lua     Lua
	Session Session
	Actors  []Actor
}

// Node names this gateway.
type Node struct {
	Name string // carried in every ClientRef; default "gw"
}

// Network holds the listeners and the admin server.
type Network struct {
	Listeners  []Listener
	SchemasDir string // resolved against Config.Dir; empty when not set
	Admin      *Admin // nil: no admin server
}

// Listener is one client-facing socket and its wire profile.
type Listener struct {
	Line             int
	Name             string
	Address          string
	Transport        string // tcp | ws
	Path             string // ws only; default /ws
	AllowedOrigins   []string
	HandshakeTimeout time.Duration
	TLS              *TLS
	EntryService     string
	Protocol         Protocol
}

// TLS names the files of a listener's TLS identity, resolved against Config.Dir.
type TLS struct {
	CertFile     string
	KeyFile      string
	ClientCAFile string // set: clients must present a certificate it signed
}

// Protocol is a listener's envelope and body codec.
type Protocol struct {
	Envelope      string // idlen | typelen | lenprefix | delimiter
	Body          string // json | raw | protobuf
	MaxFrameBytes int    // header + body
	DescriptorSet string // protobuf only; resolved against Config.Dir
}

// Admin is the operators' HTTP server.
type Admin struct {
	Address string
	PProf   bool
}

// Log configures log/slog.
type Log struct {
	Format string // json | text
	Level  string // debug | info | warn | error
}

// Lua holds the limits every VM runs under.
type Lua struct {
	MaxStringBytes int64
	HeapLimitBytes int64
}

// Session holds the per-session limits and policies.
type Session struct {
	IdleTimeout    time.Duration
	WriteTimeout   time.Duration
	MaxInflight    int
	OutboundQueue  int
	DuplicateLogin string // kick_old | reject_new
	MaxSessions    int
	RateLimit      RateLimit
	ShutdownGrace  time.Duration
}

// RateLimit is a token bucket over the frames one session sends.
type RateLimit struct {
	PerSecond int // 0: no limit
	Burst     int
}

// Actor is one Lua service: a script run in Instances VMs.
type Actor struct {
	Line           int
	Name           string
	Script         string // resolved against Config.Dir
	ScriptLine     int
	Instances      int
	Mailbox        int
	HandlerTimeout time.Duration
	MaxPending     int
	Routes         []Route
}

// Route is one entry of an actor's rpc.routes, as declared.
type Route struct {
	Line          int
	ID            int64 // 1..16777215 once valid; kept wide so a bad value can be reported
	Name          string
	Binding       string
	Direction     Direction
	OwnerService  string // defaults to the declaring actor
	RequiresAuth  bool
	Action        Action
	LazyDecode    bool
	RequestCodec  string
	RequestSchema string
}

// Label names the route in messages: its id, and its name when it has one.
func (r *Route) Label() string { return RouteLabel(r.ID, r.Name) }

// MaxRouteID is the largest route id: idlen carries it in 24 bits.
const MaxRouteID = 1<<24 - 1

// MaxTypelenRouteID is the largest route id a typelen header can carry.
const MaxTypelenRouteID = 1<<16 - 1
