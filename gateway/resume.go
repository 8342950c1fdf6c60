package gateway

import (
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/session"
)

// resume handles a connection whose first frame is a resume (SPEC §4
// Resume). With the token of a session of this gateway, the connection
// takes that session over: its own fresh session is dropped unheard of,
// the session.resumed status (with a new token) is written first, then
// everything the session queued while suspended, and the target's
// client_resumed runs. With any other token, or with resume off, the
// client gets session.resume_failed and the connection goes on as the new
// session it already is, so that it can log in again.
func (c *conn) resume(token string) {
	g := c.g
	if g.cfg.Session.ResumeWindow <= 0 {
		c.resumeFailed("resume is not enabled on this gateway")
		return
	}
	if s := g.sessions.ByToken(token); s != nil && g.svc.Crowded(s.Binding().Target) {
		// Its client_resumed would wait behind a full control lane; the
		// token stays good for a later try.
		g.m.LimitsHit.WithLabelValues("control_lane").Inc()
		c.resumeFailed("the session's service is overloaded; try again later")
		return
	}
	s, att, wasSuspended, err := g.sessions.Resume(token)
	if err != nil {
		c.resumeFailed(err.Message)
		return
	}
	p := peerOf(s)
	if p == nil {
		c.resumeFailed("the session has ended") // it closed as it was resumed
		return
	}
	// Hand the connection over: the fresh session's write side leaves the
	// connection alone when its session ends as Replaced.
	fresh := c.p.s
	fresh.Close(session.Replaced, nil)
	c.writes.Wait() // the fresh session's write side is done: the connection is free
	c.greeting = &envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumed)}
	if wasSuspended {
		// The suspended session held a max_sessions slot; this
		// connection brought its own.
		g.m.SessionsSuspended.Dec()
		g.live.Add(-1)
	}
	g.m.SessionResumes.WithLabelValues("ok").Inc()
	c.greeting.Token = g.sessions.IssueToken(s, g.name)
	c.attach(p, att)
	c.kick(false) // the write loop writes the greeting, then what was queued
	b := s.Binding()
	g.svc.Control(b.Target, &ingress.Resumed{Ref: b.Ref(s.ID), RemoteAddr: s.RemoteAddr})
}

// resumeFailed tells the client its resume failed; the connection goes on
// as a new session.
func (c *conn) resumeFailed(msg string) {
	c.g.m.SessionResumes.WithLabelValues("failed").Inc()
	c.p.s.Status(&envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumeFailed), Message: msg})
}
