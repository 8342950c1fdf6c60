package cluster

import (
	"sync"
	"time"

	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// owners is what a node hosting service instances knows of the sessions
// they are the targets of, wherever those sessions' gateways run:
//
//   - which sessions of each gateway target which of its instances, so that
//     when a gateway dies every instance runs client_disconnected(...,
//     "gateway_lost") once for each of its sessions (SPEC §10). It is
//     learnt from the messages the instances get: a frame (a new
//     session's entry target hears of it first so), Bound, Disconnected,
//     and a bind that moved the session away.
//   - which session holds each player bound to its instances: the
//     player's owning shard for cluster-wide duplicate login. A bind's
//     target is fnv1a64(player_id) % instances, one VM on one node, so
//     every bind of a player to a service asks that one node (Claim),
//     which answers and reserves the player in one step, under one lock.
//     See docs/cluster.md for why this and not a JetStream KV.
type owners struct {
	mu       sync.Mutex // guards sessions and players
	sessions map[sessKey]owned
	players  map[string]hold
}

// sessKey names a session cluster-wide: session ids are unique per
// gateway only.
type sessKey struct {
	gateway string
	id      uint64
}

func keyOf(r egress.ClientRef) sessKey { return sessKey{r.Gateway, r.SessionID} }

// owned is a session one of this node's instances is the target of.
type owned struct {
	ref    egress.ClientRef // at the latest epoch seen
	target egress.ActorID
}

// hold is the session holding a player, or a reservation for a bind in
// progress (until is set: it lapses then if the bind never completed).
type hold struct {
	ref   egress.ClientRef
	until time.Time
}

// reservation is how long a claim holds a player for a bind in progress:
// the bind completes within a round trip or two, or fails and releases.
const reservation = 10 * time.Second

func newOwners() *owners {
	return &owners{sessions: map[sessKey]owned{}, players: map[string]hold{}}
}

// seen records a frame of ref for target: a session the node had not heard
// of (a new session at its entry service) is its target's from now on.
func (o *owners) seen(target egress.ActorID, ref egress.ClientRef) {
	k := keyOf(ref)
	o.mu.Lock()
	if cur, ok := o.sessions[k]; !ok || cur.ref.Epoch < ref.Epoch {
		o.sessions[k] = owned{ref: ref, target: target}
	}
	o.mu.Unlock()
}

// lifecycle records a session message for target.
func (o *owners) lifecycle(target egress.ActorID, m any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch m := m.(type) {
	case *ingress.Bound:
		k := keyOf(m.Ref)
		o.sessions[k] = owned{ref: m.Ref, target: target}
		if m.Ref.PlayerID != "" {
			o.players[m.Ref.PlayerID] = hold{ref: m.Ref}
		}
	case *ingress.Disconnected:
		k := keyOf(m.Ref)
		if cur, ok := o.sessions[k]; ok && cur.target == target {
			delete(o.sessions, k)
		}
		o.forgetLocked(m.Ref.PlayerID, k)
	}
}

// moved records that a bind made by caller, one of this node's
// instances, moved the session of ref to another target.
func (o *owners) moved(caller egress.ActorID, ref egress.ClientRef) {
	k := keyOf(ref)
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, ok := o.sessions[k]; ok && cur.target == caller {
		delete(o.sessions, k)
		o.forgetLocked(cur.ref.PlayerID, k)
	}
}

func (o *owners) forgetLocked(player string, k sessKey) {
	if h, ok := o.players[player]; ok && keyOf(h.ref) == k {
		delete(o.players, player)
	}
}

// claim is a bind's question to the player's owning shard: the other
// session holding player, if any, on a gateway alive says live. The player
// is reserved for candidate unless it is held and reject is set
// (reject_new refuses the bind; kick_old kicks the holder and goes on).
func (o *owners) claim(player string, candidate egress.ClientRef, reject bool, live func(gateway string) bool, now time.Time) (egress.ClientRef, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h, held := o.players[player]
	held = held && keyOf(h.ref) != keyOf(candidate) && live(h.ref.Gateway) && (h.until.IsZero() || now.Before(h.until))
	if held && reject {
		return h.ref, true
	}
	o.players[player] = hold{ref: candidate, until: now.Add(reservation)}
	return h.ref, held
}

// release gives back the reservation of a bind that failed.
func (o *owners) release(player string, candidate egress.ClientRef) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if h, ok := o.players[player]; ok && !h.until.IsZero() && keyOf(h.ref) == keyOf(candidate) {
		delete(o.players, player)
	}
}

// gatewayLost forgets every session of gateway and returns them with
// their targets, for their gateway_lost Disconnected.
func (o *owners) gatewayLost(gateway string) []owned {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []owned
	for k, s := range o.sessions {
		if k.gateway == gateway {
			out = append(out, s)
			delete(o.sessions, k)
		}
	}
	for p, h := range o.players {
		if h.ref.Gateway == gateway {
			delete(o.players, p)
		}
	}
	return out
}
