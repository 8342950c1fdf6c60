package cluster

import (
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/service"
	"github.com/shieldrpc/shield/session"
	"github.com/shieldrpc/shield/statesync"
)

// Rooms and match queues across nodes (docs/rooms.md §11). A room's id
// names its node (§3.1), so a room target needs no directory: what is
// sent to it goes on <prefix>.room.<node>.<kind>.<hex>, which its node
// serves with one wildcard subscription for all its rooms, answering
// room_not_found for one that is gone. A create goes to the node the
// placement picked on <prefix>.rooms.<node>; a match queue is an instance
// of its own ({"@match", name}) on <prefix>.match.<name>.

// roomNode is the node a room target lives on; "" for any other target.
func roomNode(a egress.ActorID) string {
	if a.Room == "" || a.Service == service.QueueService {
		return ""
	}
	_, node, ok := luavm.ParseRoomID(a.Room)
	if !ok {
		return ""
	}
	return node
}

// local reports whether target is this node's to serve: an instance
// hosted here, or a room of this node, live or gone (the runtime answers
// room_not_found for a gone one).
func (n *Node) local(target egress.ActorID) bool {
	return n.rt.Hosted(target) || roomNode(target) == n.name
}

// onRoom serves every room of this node: the target is the subject's.
func (n *Node) onRoom(msg *nats.Msg) {
	// <prefix>.room.<node>.<kind>.<hex>
	i := strings.LastIndexByte(msg.Subject, '.')
	j := strings.LastIndexByte(msg.Subject[:max(i, 0)], '.')
	if i < 0 || j < 0 {
		return
	}
	kind, hex := msg.Subject[j+1:i], msg.Subject[i+1:]
	n.onInstance(egress.ActorID{Service: kind, Instance: -1, Room: kind + "/" + hex + "@" + n.name})(msg)
}

// onCreate makes a room another node placed here (§3.2): the runtime
// answers the create on its Reply.
func (n *Node) onCreate(msg *nats.Msg) {
	var m pb.Instance
	err := proto.Unmarshal(msg.Data, &m)
	k, ok := m.Kind.(*pb.Instance_Call)
	if err != nil || !ok || msg.Reply == "" {
		n.log.Warn("cluster: undecodable room create dropped", "subject", msg.Subject)
		return
	}
	n.cm.In(metrics.KindCall)
	c := callOf(k.Call, msg.Reply, time.Now())
	if err := n.rt.Route(c); err != nil {
		n.Return(&luavm.Result{To: c.From, ID: c.ID, Gen: c.Gen, Err: err, Reply: c.Reply})
	}
}

// PlaceRoom picks the node for a new room of kind (§3.2, service.Remote):
// among the live hosts not draining and under max_rooms by their last
// heartbeat (this node by its own count), the one with the fewest rooms
// of the kind; ties go to this node, then to the bytewise-lowest name. A
// pick counts at once as one more room there until that node's next
// heartbeat says how many it has, so that a burst of creates (a
// matchmaker's) is spread too. No pick: unavailable when no live node
// hosts the kind, busy when every one is full.
func (n *Node) PlaceRoom(kind string, live, limit int, here bool) (string, *codes.Error) {
	best, hosts := n.pickRoom(kind, live, limit, here, "")
	switch {
	case best == "" && hosts == 0:
		return "", codes.New(codes.Unavailable, "no live node hosts room kind %s", kind)
	case best == "":
		return "", codes.New(codes.Busy, "every node hosting room kind %s is full (room.max_rooms)", kind)
	case best != n.name:
		n.peers.placed(best, kind)
	}
	return best, nil
}

// pickRoom is PlaceRoom's choice, passing over the node except, and how
// many live hosts not draining it saw (this node included), full or not.
func (n *Node) pickRoom(kind string, live, limit int, here bool, except string) (best string, hosts int) {
	bestLive := 0
	if here && n.name != except {
		hosts++
		if live < limit {
			best, bestLive = n.name, live
		}
	}
	for _, p := range n.peers.roomHosts(kind) {
		if p.name == except {
			continue
		}
		hosts++
		if p.live >= p.max {
			continue
		}
		if best == "" || p.live < bestLive || (p.live == bestLive && best != n.name && p.name < best) {
			best, bestLive = p.name, p.live
		}
	}
	return best, hosts
}

// repick is §3.2's second pick: the create p was refused by its node as
// full (refused is codes.Busy: full since its heartbeat, from another
// node's creates or a queue's there) or as unavailable (its drain began
// and this node had not yet heard; or it no longer hosts the kind). That
// node counts as full, or as draining, until its next heartbeat, and the
// create goes to the next pick, once. It reports whether it went; if not,
// the refusal stands.
func (n *Node) repick(p *pending, refused codes.Code) bool {
	c := p.call
	kind := c.To.Service
	if refused == codes.Busy {
		n.peers.full(p.node, kind)
	} else {
		n.peers.drained(p.node)
	}
	here := slices.Contains(n.roomKinds, kind) && !n.rt.Draining()
	next, _ := n.pickRoom(kind, n.rt.RoomCount(kind), n.roomMax[kind], here, p.node)
	if next == "" {
		return false
	}
	if next != n.name {
		n.peers.placed(next, kind)
	}
	// To this node too over NATS: its create subject makes the room here,
	// as for a create placed here by another node.
	if err := n.sendCallAs(next, n.subj.creates(next), c, true); err != nil {
		return false
	}
	n.log.Debug("cluster: a room create refused as full went to the next pick", "kind", kind, "refused_by", p.node, "to", next)
	return true
}

// CreateRoom sends shield.room.create's call to the node that makes it
// (service.Remote); its answer comes on this node's reply subject.
func (n *Node) CreateRoom(node string, c *luavm.Call) *codes.Error {
	return n.sendCall(node, n.subj.creates(node), c)
}

// roomLoads are this node's room kinds with their live rooms, for its
// heartbeat.
func (n *Node) roomLoads() []*pb.RoomLoad {
	out := make([]*pb.RoomLoad, 0, len(n.roomKinds))
	for _, kind := range n.roomKinds {
		out = append(out, &pb.RoomLoad{Kind: kind, Live: uint32(n.rt.RoomCount(kind)), MaxRooms: uint32(n.roomMax[kind])})
	}
	return out
}

// roomsLost is §11.4 "a room's node dies" at this gateway: each session
// bound to one of p's rooms goes back to its return target, with END
// room_lost queued by that bind; one whose return target is gone too
// closes with session.target_lost.
func (n *Node) roomsLost(p *peer) {
	notice := &envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionTargetLost),
		Message: "the node hosting this session's room, and its home, are gone"}
	end := statesync.AppendEnd(nil, "room_lost", "", 0) // no message: no limit to keep to
	bodies := egress.SameBody(n.cfg.BodyCodecKeys(), end)
	for _, s := range n.gw.Sessions().All() {
		b := s.Binding()
		if roomNode(b.Target) != p.name {
			continue
		}
		if !n.local(b.Return) && n.peers.hostOf(b.Return) == "" {
			s.Close(session.TargetLost, notice)
			continue
		}
		ref := s.Ref()
		then := &egress.Push{RouteID: descriptor.RouteRoomState, Bodies: bodies, Targets: []egress.ClientRef{ref}}
		n.gw.Bind(&egress.BindRequest{Ref: ref, PlayerID: b.PlayerID, Target: b.Return, Caller: b.Target, Left: "room_lost", Then: then},
			func(_ egress.ClientRef, err *codes.Error) {
				if err != nil {
					n.log.Warn("cluster: a member of a lost room could not go home", "session_id", ref.SessionID, "error", err.Message)
				}
			})
	}
}

// roomHost is what a peer's heartbeat said of one room kind.
type roomHost struct {
	name      string
	live, max int
}

// roomHosts are the live peers hosting kind, with their load.
func (t *peerTable) roomHosts(kind string) []roomHost {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []roomHost
	for _, p := range t.byName {
		if p.joining || p.draining {
			continue
		}
		for _, r := range p.rooms {
			if r.Kind == kind {
				out = append(out, roomHost{name: p.name, live: int(r.Live), max: int(r.MaxRooms)})
			}
		}
	}
	slices.SortFunc(out, func(a, b roomHost) int { return strings.Compare(a.name, b.name) })
	return out
}

// placed counts a room just placed on node name until its next heartbeat.
func (t *peerTable) placed(name, kind string) {
	t.load(name, kind, func(r *pb.RoomLoad) { r.Live++ })
}

// full counts node name as full of kind until its next heartbeat: it
// refused a create as full.
func (t *peerTable) full(name, kind string) {
	t.load(name, kind, func(r *pb.RoomLoad) { r.Live = max(r.Live, r.MaxRooms) })
}

// drained counts node name as draining until its next heartbeat: it
// refused a create as unavailable, which its drain's heartbeat will say.
func (t *peerTable) drained(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.byName[name]; p != nil {
		p.draining = true
	}
}

// load changes what node name's last heartbeat said of kind, until its
// next one replaces it.
func (t *peerTable) load(name, kind string, change func(*pb.RoomLoad)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.byName[name]; p != nil {
		for _, r := range p.rooms {
			if r.Kind == kind {
				change(r)
			}
		}
	}
}

// hostsKindLocked reports whether the live node name hosts room kind
// kind; t.mu is held.
func (t *peerTable) hostsKindLocked(name, kind string) bool {
	p := t.byName[name]
	if p == nil || p.joining {
		return false
	}
	for _, r := range p.rooms {
		if r.Kind == kind {
			return true
		}
	}
	return false
}
