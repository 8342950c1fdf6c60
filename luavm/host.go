package luavm

import (
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
)

// Address names the service a shield.send or shield.call goes to: a plain
// service name, or a service and a shard key for services with instances >
// 1 (the VM is fnv1a64(key) % instances).
type Address struct {
	Service string
	Key     string
	HasKey  bool
}

// Call is a shield.call or shield.send from one VM to another service's
// business lane. Args are plain data (see Value).
type Call struct {
	From     egress.ActorID
	To       Address
	ID       uint64 // the caller's pending id; 0 for shield.send
	Method   string
	Args     []Value
	Deadline time.Time // the caller's remaining budget travels with the call
	// Gen is the calling VM's generation. An actor whose VM was replaced
	// after a crash keeps its ActorID, and the new VM numbers its pending
	// calls from 1 again: Gen keeps a reply meant for the old VM from
	// resuming whatever the new one is waiting for under the same ID.
	Gen uint64
}

// Result completes something a VM is waiting for: a call's reply or a timer.
// It travels on the receiver's control lane and is never dropped.
type Result struct {
	To     egress.ActorID
	ID     uint64
	Gen    uint64 // the Call's Gen
	Values []Value
	Err    *codes.Error
}

// Host is what a VM needs from the actor that runs it. Its methods are
// called on the actor's goroutine and never block.
type Host interface {
	// Self is the VM's own service and instance.
	Self() egress.ActorID
	// Instances returns the number of VMs of a service, or 0 when there is
	// no such service.
	Instances(service string) int
	// Route delivers a call to its service's business lane, or fails fast
	// with client_rpc.unavailable or client_rpc.busy.
	Route(c *Call) *codes.Error
	// Return delivers a call's result to the caller's control lane.
	Return(r *Result)
	// Gateway is where answers, pushes, binds and kicks go.
	Gateway() egress.Gateway
}
