package session

import (
	"sync"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
)

// Table finds live sessions by id and by player. Bind is the one function
// that changes a binding, under the table's lock, so that the player index
// and every binding always agree.
type Table struct {
	mu       sync.RWMutex // guards byID and byPlayer, and every Session.binding change
	byID     map[uint64]*Session
	byPlayer map[string]*Session
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{byID: map[uint64]*Session{}, byPlayer: map[string]*Session{}}
}

// Add registers a new session.
func (t *Table) Add(s *Session) {
	t.mu.Lock()
	t.byID[s.ID] = s
	t.mu.Unlock()
}

// Remove unregisters s (called from its onClose). A player index entry is
// removed only when it still names s: a newer session of the player may
// already hold it.
func (t *Table) Remove(s *Session, b Binding) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[s.ID] == s {
		delete(t.byID, s.ID)
	}
	if b.PlayerID != "" && t.byPlayer[b.PlayerID] == s {
		delete(t.byPlayer, b.PlayerID)
	}
}

// Get returns the live session with the given id.
func (t *Table) Get(id uint64) *Session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byID[id]
}

// Len is the number of live sessions.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byID)
}

// All returns a snapshot of the live sessions.
func (t *Table) All() []*Session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*Session, 0, len(t.byID))
	for _, s := range t.byID {
		out = append(out, s)
	}
	return out
}

// BindPolicy is what Bind does when the player is already online.
type BindPolicy struct {
	KickOld bool // true: kick_old; false: reject_new
	// Pick resolves the new target service and player to a VM.
	Pick func(service, playerID string) (egress.ActorID, *codes.Error)
}

// Bind moves a session to a new target and player by compare-and-set on
// the epoch (SPEC §4): the session must exist, the caller must be its
// current target, and req.Ref.Epoch must be its epoch. A player online in
// another session is kicked or refused, as the policy says. When Bind
// returns, any other session that held the player has finished closing: its
// onClose ran, so its Disconnected is queued to its target before the new
// binding exists (a player VM sees the old session leave first).
func (t *Table) Bind(req *egress.BindRequest, p BindPolicy) (egress.ClientRef, error) {
	target, cerr := p.Pick(req.Target, req.PlayerID)
	if cerr != nil {
		return egress.ClientRef{}, cerr
	}
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
			// its onClose takes the lock to leave the table. Done is
			// closed only after onClose has queued its Disconnected.
			t.mu.Unlock()
			other.Close(Kicked, KickNotice("logged in from another session"))
			<-other.Done()
			t.mu.Lock()
			if t.byPlayer[req.PlayerID] == other {
				delete(t.byPlayer, req.PlayerID) // an onClose that did not remove it
			}
			t.mu.Unlock()
			continue // the session may have changed meanwhile: check again
		}
		nb, ok := s.rebind(target, req.PlayerID)
		if !ok {
			t.mu.Unlock()
			return egress.ClientRef{}, codes.New(codes.SessionNotFound, "session %d is gone", req.Ref.SessionID)
		}
		if b.PlayerID != "" && t.byPlayer[b.PlayerID] == s {
			delete(t.byPlayer, b.PlayerID)
		}
		t.byPlayer[req.PlayerID] = s
		t.mu.Unlock()
		return egress.ClientRef{SessionID: s.ID, Epoch: nb.Epoch, PlayerID: nb.PlayerID, Gateway: nb.Gateway}, nil
	}
}

// checkBind is the compare-and-set's compare: the session is open, then
// the epoch, then the caller.
func checkBind(s *Session, b Binding, req *egress.BindRequest) error {
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
