package cluster

import (
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/tracing"
)

// The conversions between Shield's plain-data messages and their protobuf
// form (clusterpb). Each direction is written once, here, so that a field
// added to a message has one place to cross.

func refPB(r egress.ClientRef) *pb.ClientRef {
	return &pb.ClientRef{SessionId: r.SessionID, Epoch: r.Epoch, PlayerId: r.PlayerID, Gateway: r.Gateway}
}

func refOf(r *pb.ClientRef) egress.ClientRef {
	if r == nil {
		return egress.ClientRef{}
	}
	return egress.ClientRef{SessionID: r.SessionId, Epoch: r.Epoch, PlayerID: r.PlayerId, Gateway: r.Gateway}
}

func actorPB(a egress.ActorID) *pb.ActorID {
	return &pb.ActorID{Service: a.Service, Instance: int32(a.Instance), Room: a.Room}
}

func actorOf(a *pb.ActorID) egress.ActorID {
	if a == nil {
		return egress.ActorID{}
	}
	return egress.ActorID{Service: a.Service, Instance: int(a.Instance), Room: a.Room}
}

func errPB(e *codes.Error) *pb.Error {
	if e == nil {
		return nil
	}
	return &pb.Error{Code: string(e.Code), Message: e.Message}
}

func errOf(e *pb.Error) *codes.Error {
	if e == nil {
		return nil
	}
	return &codes.Error{Code: codes.Code(e.Code), Message: e.Message}
}

// ingressOf is the frame an Ingress carries (the hop's own reader is
// fastwire.go; this is for what it declines). The age of the frame, not
// the time it was read, crosses: no two clocks are compared.
func ingressOf(m *pb.Ingress, reply string, now time.Time) *ingress.ClientIngress {
	return &ingress.ClientIngress{
		Client: ingress.ClientContext{Ref: refOf(m.Ref), Route: m.Route, RouteID: m.RouteId, RequestID: m.RequestId,
			RemoteAddr: m.RemoteAddr},
		Body: m.Body, Codec: m.Codec, Unwrap: m.Unwrap, Received: now.Add(-time.Duration(m.AgeNanos)), Reply: reply,
		Budget: time.Duration(max(m.BudgetNanos, 0)), Trace: traceOf(m.Traceparent),
	}
}

// traceOf reads a message's traceparent: empty, or one another node
// wrote; anything else is no trace (the node's spans start none).
func traceOf(tp string) tracing.Context {
	if tp == "" {
		return tracing.Context{}
	}
	c, _ := tracing.ParseTraceParent(tp)
	return c
}

// callPB is a shield.call or send for another node: a call's deadline
// crosses as the budget left.
func callPB(c *luavm.Call, now time.Time) *pb.Instance {
	m := &pb.Call{From: actorPB(c.From), Service: c.To.Service, Key: c.To.Key, HasKey: c.To.HasKey, Id: c.ID,
		Method: c.Method, Args: c.Args, Gen: c.Gen, Traceparent: c.Trace.TraceParent(), Room: c.To.Room, Queue: c.To.Queue}
	if !c.Deadline.IsZero() {
		m.BudgetNanos = max(int64(c.Deadline.Sub(now)), 1) // spent already: the callee answers timeout
	}
	return &pb.Instance{Kind: &pb.Instance_Call{Call: m}}
}

func callOf(m *pb.Call, reply string, now time.Time) *luavm.Call {
	c := &luavm.Call{From: actorOf(m.From), To: luavm.Address{Service: m.Service, Key: m.Key, HasKey: m.HasKey, Room: m.Room, Queue: m.Queue},
		ID: m.Id, Method: m.Method, Args: m.Args, Gen: m.Gen, Trace: traceOf(m.Traceparent)}
	if m.BudgetNanos > 0 {
		c.Deadline = now.Add(time.Duration(m.BudgetNanos))
	}
	if c.ID != 0 {
		c.Reply = reply
	}
	return c
}

// lifecyclePB is one of the session messages of ingress for a remote
// target, or nil for a message that is not one.
func lifecyclePB(m any) *pb.Instance {
	var l *pb.Lifecycle
	switch m := m.(type) {
	case *ingress.Bound:
		l = &pb.Lifecycle{Kind: pb.Lifecycle_BOUND, Ref: refPB(m.Ref), RemoteAddr: m.RemoteAddr, FromRoom: m.FromRoom,
			LeaveReason: m.Left}
		if !m.Return.IsZero() {
			l.ReturnTo = actorPB(m.Return)
		}
	case *ingress.Suspended:
		l = &pb.Lifecycle{Kind: pb.Lifecycle_SUSPENDED, Ref: refPB(m.Ref), RemoteAddr: m.RemoteAddr}
	case *ingress.Resumed:
		l = &pb.Lifecycle{Kind: pb.Lifecycle_RESUMED, Ref: refPB(m.Ref), RemoteAddr: m.RemoteAddr}
	case *ingress.Disconnected:
		l = &pb.Lifecycle{Kind: pb.Lifecycle_DISCONNECTED, Ref: refPB(m.Ref), Reason: m.Reason}
	default:
		return nil
	}
	return &pb.Instance{Kind: &pb.Instance_Lifecycle{Lifecycle: l}}
}

// lifecycleOf is the session message a Lifecycle carries, or nil for an
// unknown kind.
func lifecycleOf(l *pb.Lifecycle) any {
	ref := refOf(l.Ref)
	switch l.Kind {
	case pb.Lifecycle_BOUND:
		return &ingress.Bound{Ref: ref, RemoteAddr: l.RemoteAddr, FromRoom: l.FromRoom, Left: l.LeaveReason, Return: actorOf(l.ReturnTo)}
	case pb.Lifecycle_SUSPENDED:
		return &ingress.Suspended{Ref: ref, RemoteAddr: l.RemoteAddr}
	case pb.Lifecycle_RESUMED:
		return &ingress.Resumed{Ref: ref, RemoteAddr: l.RemoteAddr}
	case pb.Lifecycle_DISCONNECTED:
		return &ingress.Disconnected{Ref: ref, Reason: l.Reason}
	default:
		return nil
	}
}

func pushPB(p *egress.Push, targets []egress.ClientRef) *pb.Gateway {
	m := &pb.Push{RouteId: p.RouteID, Bodies: p.Bodies, Targets: make([]*pb.ClientRef, len(targets))}
	for i, t := range targets {
		m.Targets[i] = refPB(t)
	}
	return &pb.Gateway{Kind: &pb.Gateway_Push{Push: m}}
}

func pushOf(m *pb.Push) *egress.Push {
	p := &egress.Push{RouteID: m.RouteId, Bodies: m.Bodies, Targets: make([]egress.ClientRef, len(m.Targets))}
	for i, t := range m.Targets {
		p.Targets[i] = refOf(t)
	}
	return p
}

func bindPB(b *egress.BindRequest) *pb.Gateway {
	m := &pb.BindRequest{Ref: refPB(b.Ref), PlayerId: b.PlayerID, Target: actorPB(b.Target), Caller: actorPB(b.Caller), Left: b.Left}
	if !b.Return.IsZero() {
		m.ReturnTo = actorPB(b.Return)
	}
	if b.Then != nil {
		m.Then = pushPB(b.Then, b.Then.Targets).GetPush()
	}
	return &pb.Gateway{Kind: &pb.Gateway_Bind{Bind: m}}
}

func bindOf(m *pb.BindRequest) *egress.BindRequest {
	b := &egress.BindRequest{Ref: refOf(m.Ref), PlayerID: m.PlayerId, Target: actorOf(m.Target), Caller: actorOf(m.Caller),
		Return: actorOf(m.ReturnTo), Left: m.Left}
	if m.Then != nil {
		b.Then = pushOf(m.Then)
	}
	return b
}

// marshal encodes a message the node built itself: it cannot fail for
// want of a required field (proto3 has none), so a failure is a bug.
func marshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic("cluster: marshal: " + err.Error())
	}
	return b
}
