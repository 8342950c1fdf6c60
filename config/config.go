// Package config decodes and validates Shield's configuration file
// (SPEC.md §2): strict YAML decoding in which an unknown key is an error,
// defaults filled from one place, and the layer-1 checks that need nothing but
// the file itself. Every problem carries its file and line, and the actor and
// route it concerns.
//
// Layer 2 (the merge of every actor's routes) lives in package descriptor and
// layer 3 (compiling bindings in each VM) in package luavm.
package config

import (
	"strconv"
	"strings"
	"time"
)

// Config is a decoded, defaulted configuration. It is plain data: after Load
// returns, nothing changes it.
type Config struct {
	File    string // the path the config was loaded from, as given
	Dir     string // the folder relative paths inside the file resolve against
	Node    Node
	Cluster *Cluster // nil: one process, no NATS (SPEC §10)
	Storage *Storage // nil: every shield.kv function raises client_rpc.unavailable
	Network Network
	Log     Log
	Tracing Tracing
	Lua     Lua
	Session Session
	Actors  []Actor
	Match   Match // matchmaking queues (docs/rooms.md §2.3); none by default
}

// Node names this gateway and, in a cluster, says which actor instances
// it runs.
type Node struct {
	Name string // carried in every ClientRef; default "gw"

	// Services is node.services as written, cluster only. Absent and []
	// differ: nil (the key absent) hosts every actor, an empty non-nil
	// slice hosts none (a gateway node). Use Config.Hosts rather than
	// reading it, so that the nil case is never forgotten.
	Services     []NodeService
	ServicesLine int // the line of node.services; 0 when absent

	// Queues is node.queues as written, cluster only: nil when absent
	// (see Config.HostsQueue), non-nil and empty for [].
	Queues     []NodeQueue
	QueuesLine int // the line of node.queues; 0 when absent
}

// NodeService is one entry of node.services: every instance of an actor
// ("player") or one of them ("player/0").
type NodeService struct {
	Line     int
	Actor    string
	Instance int // 0-based; AllInstances for a bare actor name
}

// AllInstances is NodeService.Instance for an entry naming an actor without
// an instance: the node hosts every VM of it.
const AllInstances = -1

// String returns the entry as it is written in node.services.
func (s NodeService) String() string {
	if s.Instance == AllInstances {
		return s.Actor
	}
	return s.Actor + "/" + strconv.Itoa(s.Instance)
}

// Cluster is how nodes find each other (SPEC §10): one NATS (an external
// server or cluster, or one embedded in this node) and one subject prefix.
type Cluster struct {
	Line        int
	NATS        string // comma-separated URLs as written, the form NATS clients take; empty with Embedded
	Embedded    string // host:port of the NATS server run inside this node; empty with NATS
	Prefix      string // the first token of every subject; default "shield"
	Heartbeat   time.Duration
	NodeTimeout time.Duration // at least twice Heartbeat
}

// URLs returns the NATS URLs one by one, or nil with an embedded server.
func (c *Cluster) URLs() []string {
	if c.NATS == "" {
		return nil
	}
	urls := strings.Split(c.NATS, ",")
	for i := range urls {
		urls[i] = strings.TrimSpace(urls[i])
	}
	return urls
}

// Storage configures shield.kv (SPEC §11): JetStream key-value buckets, in
// the cluster's NATS or in an embedded server that keeps its files in
// DataDir.
type Storage struct {
	Line    int
	DataDir string // resolved against Config.Dir; default "data"; unused with an external NATS
	// Replicas is how many JetStream servers keep each bucket: 1 (the
	// default), or 3 (or 5) on a NATS cluster of that many servers.
	Replicas int
	Buckets  []Bucket
}

// Bucket is one key-value bucket, created or updated at start.
type Bucket struct {
	Line          int
	Name          string        // letters, digits, '_' and '-'; unique
	MaxValueBytes int           // the longest compact JSON value a write may store
	TTL           time.Duration // a key expires this long after its last write; 0: never
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
	PProf   bool   // /debug/pprof/
	Play    bool   // the browser demo at /play/
	Token   string // bearer token of /admin/*; empty: /admin/* answers 404
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
	HTTP           HTTP
}

// HTTP bounds shield.http.request (SPEC §11).
type HTTP struct {
	// Allow holds the "host:port" pairs a VM may call, as written (a host
	// compares case-insensitively); empty: no HTTP at all.
	Allow            []string
	Timeout          time.Duration // capped further by the handler's budget
	MaxResponseBytes int64         // of a response body, as decoded
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

	OutboundQueueBytes int           // bytes of pushes waiting for one client
	AuthMaxFrameBytes  int           // frame cap before a bind; 0: the listener's max_frame_bytes (see AuthFrameLimit)
	AuthTimeout        time.Duration // a session without a player_id this long is closed; 0: off
	ResumeWindow       time.Duration // how long a suspended session may be resumed; 0: no resume
	// RetryHints adds retry_after_ms to the busy and rate_limited error
	// frames (docs/protocol.md §6). Off by default: SPEC §3 fixes an
	// error's body as {"code","message"}, and a client comparing it byte
	// for byte would see a key it does not expect.
	RetryHints bool
}

// AuthFrameLimit is the largest frame a session without a player_id may
// send on a listener whose max_frame_bytes is maxFrameBytes: the smaller of
// the two, or maxFrameBytes when auth_max_frame_bytes is 0. A cap above the
// listener's is not an error (the default, 8192, is above some listeners'
// max_frame_bytes); the listener's cap simply wins.
func (s *Session) AuthFrameLimit(maxFrameBytes int) int {
	if s.AuthMaxFrameBytes == 0 {
		return maxFrameBytes
	}
	return min(s.AuthMaxFrameBytes, maxFrameBytes)
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
	HandlerTimeout time.Duration // at most MaxHandlerTimeout
	MaxPending     int
	Routes         []Route
	Room           *Room // nil: an ordinary service; set: a room kind (docs/rooms.md §2.1)

	// Settings is the actor's settings mapping as plain data: map[string]any,
	// []any, string, int64, float64, bool, and Null for a YAML null. It is
	// nil when the key is absent. It is shared: shield.settings() hands
	// each caller its own copy, and nothing may write into this one.
	Settings map[string]any
}

// Null is a YAML null inside an actor's settings, so that an explicit null
// (shield.null in Lua) is told apart from a key that is absent.
type Null struct{}

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
	RoomInput     bool // frames are a room's tick inputs, with no handler (docs/rooms.md §2.2)
}

// Label names the route in messages: its id, and its name when it has one.
func (r *Route) Label() string { return RouteLabel(r.ID, r.Name) }

// MaxRouteID is the largest route id: idlen carries it in 24 bits.
const MaxRouteID = 1<<24 - 1

// MaxTypelenRouteID is the largest route id a typelen header can carry.
const MaxTypelenRouteID = 1<<16 - 1

// MaxHandlerTimeout is the largest handler_timeout (SPEC §2): a run longer
// than a minute holds its session's in-flight slot and its callers' budgets
// past anything a game client waits for.
const MaxHandlerTimeout = 60 * time.Second
