package luavm

import (
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/tracing"
)

// Address names the service a shield.send or shield.call goes to: a plain
// service name, or a service and a shard key for services with instances >
// 1 (the VM is fnv1a64(key) % instances).
type Address struct {
	Service string
	Key     string
	HasKey  bool
	// Room is a room's id (docs/rooms.md §4.4: {room = id}), or
	// CreateRoom for shield.room.create's call to the kind Service.
	Room string
	// Queue is a matchmaking queue's name (docs/rooms.md §4.5): the
	// call is shield.match.enqueue's or cancel's.
	Queue string
}

// Call is a shield.call or shield.send from one VM to another service's
// business lane. It is plain data: Args are the arguments copied out of
// the caller under the JSON mapping (SPEC §8), one JSON value each, an
// empty one for a nil argument; the same in one process and across nodes.
type Call struct {
	From     egress.ActorID
	To       Address
	ID       uint64 // the caller's pending id; 0 for shield.send
	Method   string
	Args     [][]byte
	Deadline time.Time // a call's remaining budget; zero for a send, which carries none
	// Gen is the calling VM's generation. An actor whose VM was replaced
	// after a crash keeps its ActorID, and the new VM numbers its pending
	// calls from 1 again: Gen keeps a reply meant for the old VM from
	// resuming whatever the new one is waiting for under the same ID.
	Gen uint64
	// Reply is opaque to the VMs: in a cluster, where a call that crossed
	// nodes wants its Result (a NATS reply subject); empty in one
	// process. Every Result answering the call copies it.
	Reply string
	// Trace is the span of the caller's shield.call or shield.send, the
	// parent of the callee's method span; zero when not traced.
	Trace tracing.Context
}

// Result completes something a VM is waiting for: a call's reply, a
// bind's outcome, or an op's. It travels on the receiver's control lane and is never
// dropped. Values are the results, copied like a Call's Args.
type Result struct {
	To     egress.ActorID
	ID     uint64
	Gen    uint64 // the Call's Gen
	Values [][]byte
	Err    *codes.Error
	// Ref is a bind's new ClientRef.
	Ref egress.ClientRef
	// Reply is the answered Call's Reply.
	Reply string
	// op is the outcome of one of the VM's own ops (shield.http.request,
	// shield.kv.*; see ops.go). Such a Result only ever goes from an op's
	// goroutine to its own VM's control lane: it never leaves the process.
	op     opOutcome
	opDone time.Time // when the op's goroutine finished, for its span
}

// Host is what a VM needs from the actor that runs it. Its methods are
// called on the actor's goroutine and never block.
type Host interface {
	// Self is the VM's own service and instance.
	Self() egress.ActorID
	// Pick resolves a service and a shard key to the VM that key maps to,
	// as shield.client.bind does (SPEC §4): unavailable for no such
	// service.
	Pick(service, key string) (egress.ActorID, *codes.Error)
	// Route delivers a call to its service's business lane, or fails fast
	// with client_rpc.unavailable or client_rpc.busy.
	Route(c *Call) *codes.Error
	// Return delivers a result to its VM's control lane (its own included).
	Return(r *Result)
	// Sink is where answers, pushes, binds and kicks go.
	Sink() egress.Sink
}
