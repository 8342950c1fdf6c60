package cluster

import (
	"fmt"
	"slices"
	"sync"
	"time"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/service"
)

// peer is what this node knows of another node from its presence
// messages.
type peer struct {
	name      string
	inc       string // its incarnation: a restarted node is another peer
	gateway   bool
	instances []egress.ActorID
	hash      string
	started   int64
	last      time.Time      // when it was last heard from
	joining   bool           // it is still checking its start (SPEC §10 refusals): it hosts nothing yet
	links     uint64         // its NATS connection's comings-up, as it last said
	rooms     []*pb.RoomLoad // the room kinds it hosts, with their load (docs/rooms.md §3.2)
	draining  bool           // it makes no room any more: placement passes it over
}

func (p *peer) String() string { return p.name + " (" + p.inc + ")" }

// before reports whether p started before q: the tie-break between two
// nodes joining at once with the same name or an instance in common (the
// earlier one stays).
func (p *peer) before(q *peer) bool {
	if p.started != q.started {
		return p.started < q.started
	}
	return p.inc < q.inc
}

func peerOf(m *pb.Presence, now time.Time) *peer {
	p := &peer{name: m.Node, inc: m.Incarnation, gateway: m.Gateway, hash: m.TableHash, started: m.StartedUnixNano,
		last: now, joining: m.Kind == pb.Presence_JOINING, links: m.Links, rooms: m.Rooms, draining: m.Draining}
	for _, a := range m.Instances {
		p.instances = append(p.instances, actorOf(a))
	}
	return p
}

// peerTable is the live membership as this node sees it.
type peerTable struct {
	mu     sync.RWMutex // guards every field
	byName map[string]*peer
	host   map[egress.ActorID]string // instance -> the live node hosting it (joining nodes host nothing)
	dead   map[string]time.Time      // name/incarnation declared dead here -> when, kept deadMemory
}

// deadMemory is how long a verdict is remembered: a node heard from after
// it was declared dead is told so again (it must exit) for this long.
const deadMemory = 10 * time.Minute

func newPeerTable() *peerTable {
	return &peerTable{byName: map[string]*peer{}, host: map[egress.ActorID]string{}, dead: map[string]time.Time{}}
}

// hostOf is the live node hosting instance a, or "".
func (t *peerTable) hostOf(a egress.ActorID) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if node := roomNode(a); node != "" {
		if t.hostsKindLocked(node, a.Service) {
			return node
		}
		return ""
	}
	return t.host[a]
}

// isGateway reports whether name is a live gateway node.
func (t *peerTable) isGateway(name string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	p := t.byName[name]
	return p != nil && p.gateway && !p.joining
}

// live is the number of live (not joining) peers.
func (t *peerTable) live() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for _, p := range t.byName {
		if !p.joining {
			n++
		}
	}
	return n
}

// wasDeclaredDead reports whether name/inc was declared dead here.
func (t *peerTable) wasDeclaredDead(name, inc string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, ok := t.dead[name+"/"+inc]
	return ok
}

// heardSince reports whether the live node name/inc was heard since t.
func (t *peerTable) heardSince(name, inc string, since time.Time) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	p := t.byName[name]
	return p != nil && p.inc == inc && !p.joining && !p.last.Before(since)
}

// heard records a presence message from p. It returns the peer p
// replaces (the same name with another incarnation: that one is gone) and
// whether p is new to the table as a live node.
// relinked reports that the same process says its NATS connection came
// up again since it was last heard.
func (t *peerTable) heard(p *peer) (replaced *peer, joined, relinked bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.byName[p.name]
	if old != nil && old.inc == p.inc {
		old.last = p.last
		if !p.joining {
			old.rooms, old.draining = p.rooms, p.draining // the load moves with every heartbeat
		}
		relinked = old.links != 0 && p.links > old.links
		old.links = max(old.links, p.links)
		if old.joining && !p.joining {
			old.joining, old.gateway, old.instances, old.hash = false, p.gateway, p.instances, p.hash
			t.hostLocked(old)
			return nil, true, relinked
		}
		return nil, false, relinked
	}
	if old != nil && !old.joining && p.joining {
		return nil, false, false // a process starting under a live node's name: it refuses itself
	}
	if old != nil {
		t.removeLocked(old)
		replaced = old
	}
	t.byName[p.name] = p
	if !p.joining {
		t.hostLocked(p)
	}
	return replaced, !p.joining, false
}

func (t *peerTable) hostLocked(p *peer) {
	for _, a := range p.instances {
		t.host[a] = p.name
	}
}

func (t *peerTable) removeLocked(p *peer) {
	if t.byName[p.name] == p {
		delete(t.byName, p.name)
	}
	for _, a := range p.instances {
		if t.host[a] == p.name {
			delete(t.host, a)
		}
	}
}

// remove takes name/inc out of the table, and reports the peer it was, or
// nil when it was gone already; dead records a verdict.
func (t *peerTable) remove(name, inc string, dead bool, now time.Time) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if dead {
		t.dead[name+"/"+inc] = now
		for k, at := range t.dead {
			if now.Sub(at) > deadMemory {
				delete(t.dead, k)
			}
		}
	}
	p := t.byName[name]
	if p == nil || p.inc != inc {
		return nil
	}
	t.removeLocked(p)
	return p
}

// silent returns the peers not heard from since cutoff.
func (t *peerTable) silent(cutoff time.Time) []*peer {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []*peer
	for _, p := range t.byName {
		if p.last.Before(cutoff) {
			out = append(out, p)
		}
	}
	return out
}

// touchAll counts every peer as heard from now: after this node's own
// NATS connection came back, nobody is judged on the time it could not
// hear them.
func (t *peerTable) touchAll(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.byName {
		p.last = now
	}
}

// conflict is SPEC §10's start-up refusal of self against the table: a
// live node with its name, a live node hosting one of its instances, a
// live node with another route table, or a node joining at the same time
// with the same name or an instance in common that started first. It
// names the other node.
func (t *peerTable) conflict(self *peer) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := make([]string, 0, len(t.byName))
	for name := range t.byName {
		names = append(names, name)
	}
	slices.Sort(names) // the same report whatever the map's order
	for _, name := range names {
		p := t.byName[name]
		if p.joining && !p.before(self) {
			continue // it yields to this node
		}
		state := "a live node"
		if p.joining {
			state = "a node starting at the same time"
		}
		if p.name == self.name {
			return fmt.Errorf("cluster: node name %q is taken by %s (incarnation %s)", self.name, state, p.inc)
		}
		for _, a := range self.instances {
			if !slices.Contains(p.instances, a) {
				continue
			}
			if a.Service == service.QueueService {
				return fmt.Errorf("cluster: match queue %s is already hosted by node %s", a.Room, p.name)
			}
			return fmt.Errorf("cluster: %s/%d is already hosted by node %s", a.Service, a.Instance, p.name)
		}
		if !p.joining && p.hash != self.hash {
			return fmt.Errorf("cluster: the route table or actors' instances differ from node %s's (table hash %.12s here, %.12s there): every node must load the same actors block", p.name, self.hash, p.hash)
		}
	}
	return nil
}
