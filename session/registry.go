package session

import (
	"math/rand/v2"
	"sync"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
)

// Registry finds live sessions (suspended ones included) by id, by player
// and by resume token. Bind is the one function that changes a binding,
// under the registry's lock, so that the player index and every binding
// always agree.
type Registry struct {
	mu       sync.RWMutex // guards byID, byPlayer, byToken, and every Session.binding change
	byID     map[uint64]*Session
	byPlayer map[string]*Session
	byToken  map[string]*Session
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byID: map[uint64]*Session{}, byPlayer: map[string]*Session{}, byToken: map[string]*Session{}}
}

// idMask keeps a session id below 2^53, so that it is exact as a Lua (and
// JavaScript) number; all 53 bits are random (SPEC §4: at least 48).
const idMask = 1<<53 - 1

// NewID returns a random session id that no live session has. Ids are
// random rather than counted so that a ClientRef can be neither guessed
// nor kept from before a restart to reach a new session; the id is
// reserved by Add.
func (t *Registry) NewID() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for {
		id := rand.Uint64() & idMask
		if _, taken := t.byID[id]; id != 0 && !taken {
			return id
		}
	}
}

// Add registers a new session. It reports false when a live session has
// its id already (two NewID calls raced to the same random value); the
// caller then picks another.
func (t *Registry) Add(s *Session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, taken := t.byID[s.ID]; taken {
		return false
	}
	t.byID[s.ID] = s
	return true
}

// Remove unregisters s (called from its Closed hook). A player index entry
// is removed only when it still names s: a newer session of the player may
// already hold it.
func (t *Registry) Remove(s *Session, b Binding) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[s.ID] == s {
		delete(t.byID, s.ID)
	}
	if b.PlayerID != "" && t.byPlayer[b.PlayerID] == s {
		delete(t.byPlayer, b.PlayerID)
	}
	s.mu.Lock()
	tok := s.token
	s.token = ""
	s.mu.Unlock()
	if tok != "" && t.byToken[tok] == s {
		delete(t.byToken, tok)
	}
}

// Get returns the live session with the given id, or nil.
func (t *Registry) Get(id uint64) *Session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byID[id]
}

// Player returns the live session bound to player, or nil.
func (t *Registry) Player(player string) *Session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byPlayer[player]
}

// Len is the number of live sessions.
func (t *Registry) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byID)
}

// All returns a snapshot of the live sessions.
func (t *Registry) All() []*Session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*Session, 0, len(t.byID))
	for _, s := range t.byID {
		out = append(out, s)
	}
	return out
}

// Policy is what Bind does around the compare-and-set.
type Policy struct {
	KickOld bool // duplicate_login: true kick_old; false reject_new
	// Bound runs under the session's lock once the new binding is set,
	// before any frame of the new epoch can be delivered: it queues
	// client_bound for the new target. req is the bind it made.
	Bound func(s *Session, b Binding, req *egress.BindRequest)
	// Published runs under the session's lock once the new binding is
	// visible to the read loop: it queues the bind's Then push, which the
	// client must not read while a frame it sends could still be judged
	// at the old epoch.
	Published func(s *Session, b Binding, req *egress.BindRequest)
}

// Bind moves a session to a new target and player by compare-and-set on
// the epoch (SPEC §4): the session must exist, the caller must be its
// current target, and req.Ref.Epoch must be its epoch. A player online in
// another session is kicked or refused, as the policy says. When Bind
// returns, any other session that held the player has finished closing: its
// Closed hook ran, so its Disconnected is queued to its target before the
// new binding exists (a player VM sees the old session leave first).
func (t *Registry) Bind(req *egress.BindRequest, p Policy) (egress.ClientRef, *codes.Error) {
	for {
		t.mu.Lock()
		s := t.byID[req.Ref.SessionID]
		if s == nil {
			t.mu.Unlock()
			return egress.ClientRef{}, codes.New(codes.SessionNotFound, "session %d is gone", req.Ref.SessionID)
		}
		b := s.Binding()
		if err := checkBind(s, b, req); err != nil {
			t.mu.Unlock()
			return egress.ClientRef{}, err
		}
		if other := t.byPlayer[req.PlayerID]; other != nil && other != s {
			if gone, _ := other.Closed(); !gone && !p.KickOld {
				t.mu.Unlock()
				return egress.ClientRef{}, codes.New(codes.PlayerOnline, "player %q is online in another session", req.PlayerID)
			}
			// Kick it, or let its own close finish, outside the lock:
			// its Closed hook takes the lock to leave the registry. Done
			// is closed only after that hook has queued its Disconnected.
			t.mu.Unlock()
			other.Close(Kicked, KickNotice("logged in from another session"))
			<-other.Done()
			t.mu.Lock()
			if t.byPlayer[req.PlayerID] == other {
				delete(t.byPlayer, req.PlayerID) // a Closed hook that did not remove it
			}
			t.mu.Unlock()
			continue // the session may have changed meanwhile: check again
		}
		var bound, published func(Binding)
		if p.Bound != nil {
			bound = func(nb Binding) { p.Bound(s, nb, req) }
		}
		if p.Published != nil {
			published = func(nb Binding) { p.Published(s, nb, req) }
		}
		nb, ok := s.rebind(req.Target, req.Return, req.PlayerID, bound, published)
		if !ok {
			t.mu.Unlock()
			return egress.ClientRef{}, codes.New(codes.SessionNotFound, "session %d is gone", req.Ref.SessionID)
		}
		if b.PlayerID != "" && t.byPlayer[b.PlayerID] == s {
			delete(t.byPlayer, b.PlayerID)
		}
		t.byPlayer[req.PlayerID] = s
		t.mu.Unlock()
		return nb.Ref(s.ID), nil
	}
}

// checkBind is the compare-and-set's compare: the session is open, then
// the epoch, then the caller.
func checkBind(s *Session, b Binding, req *egress.BindRequest) *codes.Error {
	switch {
	case s.isClosed():
		return codes.New(codes.SessionNotFound, "session %d is gone", s.ID)
	case b.Epoch != req.Ref.Epoch:
		return codes.New(codes.EpochExpired, "session %d is at epoch %d, not %d", s.ID, b.Epoch, req.Ref.Epoch)
	case b.Target != req.Caller:
		return codes.New(codes.NotTarget, "session %d is bound to %s/%d, not %s/%d",
			s.ID, b.Target.Service, b.Target.Instance, req.Caller.Service, req.Caller.Instance)
	}
	return nil
}

// KickNotice is the session.kicked notice frame.
func KickNotice(msg string) *envelope.Frame {
	return &envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionKicked), Message: msg}
}
