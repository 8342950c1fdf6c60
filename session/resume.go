package session

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
)

// Resume (SPEC §4, session.resume_window > 0): a bound session whose
// connection ends with a resumable reason is suspended instead of closed.
// It keeps its binding, id and epoch (every ClientRef to it stays valid)
// and its outbound queue, which goes on accepting answers and pushes
// within its bounds; a new connection that presents the session's resume
// token takes it over. A session not resumed within the window closes
// with the reason its connection ended with.

// Attachment is one connection's hold on its session. It is Gone when
// the session no longer belongs to that connection: it was suspended (the
// connection is ending anyway) or another connection took it over (the
// old connection must close without a notice). The connection is woken
// then, as it is when frames are queued and when the session closes.
type Attachment struct {
	gone atomic.Bool // set once, when the attachment ends
	wake Waker       // set by Wakes; guarded by the session's mu
}

// Gone reports whether the attachment has ended. The connection learns it
// when it is woken; nobody waits on it, so it is a flag, not a channel (an
// idle session holds less).
func (a *Attachment) Gone() bool { return a.gone.Load() }

func newAttachment() *Attachment { return &Attachment{} }

// Wakes makes wake the waker of a, the session's current attachment: it is
// called, on the goroutine that caused it and never under a lock of the
// session's, whenever frames are queued for the connection, the session
// closes, or a ends. If something is queued already, or the session closed
// or left a meanwhile, wake is called at once. A connection calls it once
// it is ready to write.
func (s *Session) Wakes(a *Attachment, wake Waker) {
	s.mu.Lock()
	pending := false
	if s.att == a && !s.closed.Load() {
		a.wake = wake
		pending = s.out.setWake(wake)
	} else {
		pending = true // closed, suspended or taken over: it must look
	}
	s.mu.Unlock()
	if pending {
		wake(false)
	}
}

// goneLocked ends attachment a under the session's lock: Gone closes,
// nothing wakes a's connection for frames any more, and the caller calls
// the returned waker (a's) once it has released its locks, so that the
// connection parts.
func (s *Session) goneLocked(a *Attachment) Waker {
	a.gone.Store(true)
	s.out.setWake(nil)
	return a.wake
}

// resumeWait is a suspended session's timer and the reason it closes with
// when the timer fires.
type resumeWait struct {
	timer  *time.Timer
	reason Reason
}

// Attachment returns the current connection's attachment, nil while the
// session is suspended.
func (s *Session) Attachment() *Attachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.att
}

// Attached reports whether a is the session's current attachment.
func (s *Session) Attached(a *Attachment) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.att == a && !s.closed.Load()
}

// Suspended reports whether the session is (or was, when it closed)
// waiting for a resume.
func (s *Session) Suspended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.suspended
}

// Suspend detaches a from the session and keeps the session for window:
// if no connection resumes it by then, it closes with reason r. It
// reports false (and does nothing) when a is not the current attachment,
// the session closed or an operator is draining it: the caller then
// closes as usual.
func (s *Session) Suspend(a *Attachment, r Reason, window time.Duration) bool {
	s.mu.Lock()
	if s.closed.Load() || s.att != a || s.suspended || s.drain != nil {
		s.mu.Unlock()
		return false
	}
	s.suspended = true
	s.att = nil
	wake := s.goneLocked(a)
	s.resumeWait = &resumeWait{reason: r}
	s.resumeWait.timer = time.AfterFunc(window, func() { s.Close(r, nil) })
	s.mu.Unlock()
	callWake(wake) // the connection parts: never under the session's lock
	return true
}

func callWake(w Waker) {
	if w != nil {
		w(false)
	}
}

// tokenBytes is the resume token's randomness: 128 bits (SPEC §4).
const tokenBytes = 16

// maxTokenNode bounds the node name a token carries, so a token stays
// within SPEC's 128 characters.
const maxTokenNode = 128 - 2*tokenBytes - 1

// IssueToken gives s a fresh resume token, which voids its previous one,
// and returns it. The token is 32 hex digits of randomness, then ".", then
// the gateway's node name (cut to fit 128 characters), so that a node can
// tell its own tokens from another's.
func (t *Registry) IssueToken(s *Session, gateway string) string {
	var b [tokenBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	if len(gateway) > maxTokenNode {
		gateway = gateway[:maxTokenNode]
	}
	tok := hex.EncodeToString(b[:]) + "." + gateway
	t.mu.Lock()
	defer t.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ""
	}
	if s.token != "" && t.byToken[s.token] == s {
		delete(t.byToken, s.token)
	}
	s.token = tok
	t.byToken[tok] = s
	return tok
}

// RenewToken is a bind's new token (SPEC §4: each bind issues one): it
// calls IssueToken, but for a suspended session, whose absent client holds
// only its current token and needs it to come back (a room's bind back of a
// member whose grace ran out, docs/rooms.md §5.3). It returns the new
// token, or "" when none was issued.
func (t *Registry) RenewToken(s *Session, gateway string) string {
	if s.Suspended() {
		return ""
	}
	return t.IssueToken(s, gateway)
}

// ByToken returns the session a resume token names, nil when none: a
// look that spends nothing.
func (t *Registry) ByToken(token string) *Session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byToken[token]
}

// Resume hands the session named by token to a new connection. A
// suspended session is resumed (suspended reports true); a live one is
// taken over: its old attachment's Gone closes, and its old connection
// must end without a notice. The token is spent either way: the caller
// issues a new one. An unknown, used or expired token is
// client_rpc.session_not_found.
func (t *Registry) Resume(token string) (s *Session, a *Attachment, suspended bool, err *codes.Error) {
	var wake Waker // the old connection's, woken once the locks are released
	defer func() { callWake(wake) }()
	t.mu.Lock()
	defer t.mu.Unlock()
	s = t.byToken[token]
	if s == nil {
		return nil, nil, false, codes.New(codes.SessionNotFound, "unknown or expired resume token")
	}
	delete(t.byToken, token)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = ""
	if s.closed.Load() {
		return nil, nil, false, codes.New(codes.SessionNotFound, "the session has ended")
	}
	suspended = s.suspended
	if suspended {
		s.suspended = false
		if s.resumeWait != nil {
			s.resumeWait.timer.Stop()
			s.resumeWait = nil
		}
	} else if s.att != nil {
		wake = s.goneLocked(s.att)
	}
	s.att = newAttachment()
	return s, s.att, suspended, nil
}

// Resumed queues the session.resumed status frame ahead of everything the
// session queued while suspended, so the new connection reads it first.
func (s *Session) Resumed(f *envelope.Frame) { s.out.putFirst(f) }
