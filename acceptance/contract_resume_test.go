package acceptance

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// The resume tests (SPEC §4 Resume) run with a resume window; each logs a
// session in on a raw connection, reads its token, loses the connection
// and comes back.

const resumeSession = "  resume_window: 5s\n  idle_timeout: 60s"

// loginWithToken logs a raw connection in as user and returns its ref and
// the resume token the gateway sent with the bind.
func loginWithToken(t testing.TB, w *transcript, user string) (ref, string) {
	t.Helper()
	w.Send(req(cLogin, 1, map[string]string{"user": user}))
	var r ref
	tok := ""
	for r.PlayerID == "" || tok == "" {
		f, err := w.Next()
		if err != nil {
			t.Fatalf("%v; seen %v", err, w.Seen)
		}
		switch {
		case f.Kind == envelope.Notice && f.Code == string(codes.SessionResumeToken):
			tok = f.Token
		case f.Kind == envelope.Response && f.RequestID == 1:
			r = decodeRef(t, f)
		default:
			t.Fatalf("unexpected frame; seen %v", w.Seen)
		}
	}
	if len(tok) < 32 || len(tok) > 128 {
		t.Fatalf("token %q: want 128 random bits and at most 128 characters", tok)
	}
	return r, tok
}

// resumeFrame is the first frame of a connection that resumes.
func resumeFrame(tok string) envelope.Frame {
	return envelope.Frame{Kind: envelope.Heartbeat, Token: tok}
}

// TestResumeAfterDrop: a bound session whose connection is lost is
// suspended (client_suspended runs, the gauge counts it); pushes to it are
// accepted and queued; a new connection whose first frame is a resume
// gets session.resumed with a new token, then the queued frames in order,
// and the session is the same one (id, epoch, player); client_resumed
// runs. On every envelope, with its own resume frame.
func TestResumeAfterDrop(t *testing.T) {
	c := startContract(t, resumeSession)
	pusher := c.raw(t, "idlen")
	loginWithToken(t, pusher, "pusher")
	for _, env := range envelopes {
		t.Run(env, func(t *testing.T) {
			user := "kim-" + env
			w := c.raw(t, env)
			r, tok := loginWithToken(t, w, user)
			suspended := testutil.ToFloat64(c.Srv.Metrics.SessionsSuspended)
			w.NC.Close()
			c.Logs.WaitFor(t, "client_suspended", "svc", "hall", "player_id", user)
			if g := testutil.ToFloat64(c.Srv.Metrics.SessionsSuspended); g != suspended+1 {
				t.Fatalf("shield_sessions_suspended %v, want %v", g, suspended+1)
			}
			// Two pushes while suspended: both accepted.
			pusher.Send(req(cPushMe, 7, map[string]any{"ref": r, "count": 2}))
			got := pusher.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 7})
			if string(got.Body) != `["ok","ok"]` {
				t.Fatalf("pushes to a suspended session: %s", got.Body)
			}
			ok := testutil.ToFloat64(c.Srv.Metrics.SessionResumes.WithLabelValues("ok"))

			again := c.raw(t, env)
			again.Send(resumeFrame(tok))
			st := again.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumed)})
			if st.Token == "" || st.Token == tok {
				t.Fatalf("session.resumed token %q: want a new one", st.Token)
			}
			for i := 1; i <= 2; i++ {
				p := again.Expect(envelope.Frame{Kind: envelope.Push, RouteID: cNote})
				var body struct{ I int }
				if err := json.Unmarshal(p.Body, &body); err != nil || body.I != i {
					t.Fatalf("queued push %d: %s", i, p.Body)
				}
			}
			again.Send(req(cWho, 8, nil))
			who := decodeWho(t, again.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 8}))
			if who.SessionID != r.SessionID || who.Epoch != r.Epoch || who.PlayerID == nil || *who.PlayerID != user {
				t.Fatalf("resumed session %+v, want %+v", who, r)
			}
			c.Logs.WaitFor(t, "client_resumed", "svc", "hall", "player_id", user)
			if got := testutil.ToFloat64(c.Srv.Metrics.SessionResumes.WithLabelValues("ok")); got != ok+1 {
				t.Fatalf("resumes ok %v -> %v", ok, got)
			}
			if g := testutil.ToFloat64(c.Srv.Metrics.SessionsSuspended); g != suspended {
				t.Fatalf("shield_sessions_suspended %v after the resume, want %v", g, suspended)
			}
			// The old token was spent.
			late := c.raw(t, env)
			late.Send(resumeFrame(tok))
			late.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumeFailed)})
			// Dropped again, the session is suspended again: wait for it,
			// so that the next envelope's count starts from a still gauge.
			again.NC.Close()
			wiretest.Eventually(t, "the session suspended again", func() bool {
				return testutil.ToFloat64(c.Srv.Metrics.SessionsSuspended) == suspended+1
			})
		})
	}
}

// TestResumeFailed: an unknown token, or any resume while resume_window
// is 0, gets session.resume_failed, and the connection goes on as a new
// session that can log in.
func TestResumeFailed(t *testing.T) {
	for _, tc := range []struct{ name, session string }{
		{"unknown token", resumeSession},
		{"resume off", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startContract(t, tc.session)
			failed := testutil.ToFloat64(c.Srv.Metrics.SessionResumes.WithLabelValues("failed"))
			w := c.raw(t, "typelen")
			w.Send(resumeFrame(fmt.Sprintf("%032x.gw-contract", 7)))
			f := w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumeFailed)})
			if f.Message == "" {
				t.Fatal("resume_failed without a message")
			}
			w.Send(req(cLogin, 1, map[string]string{"user": "lee"}))
			for {
				f, err := w.Next()
				if err != nil {
					t.Fatalf("%v; seen %v", err, w.Seen)
				}
				if f.Kind == envelope.Response && f.RequestID == 1 {
					break
				}
			}
			if got := testutil.ToFloat64(c.Srv.Metrics.SessionResumes.WithLabelValues("failed")); got != failed+1 {
				t.Fatalf("resumes failed %v -> %v", failed, got)
			}
		})
	}
}

// TestResumeNotFirst: a resume that is not a connection's first frame is
// a protocol error (bad_system_frame).
func TestResumeNotFirst(t *testing.T) {
	c := startContract(t, resumeSession)
	w := c.raw(t, "idlen")
	w.Send(envelope.Frame{Kind: envelope.Heartbeat})
	w.Expect(envelope.Frame{Kind: envelope.Heartbeat})
	before := c.ProtocolErrors("bad_system_frame")
	w.Send(resumeFrame("whatever"))
	w.ExpectClosed()
	wiretest.Eventually(t, "bad_system_frame counted", func() bool { return c.ProtocolErrors("bad_system_frame") == before+1 })
}

// TestResumeTakesOverLive: a resume naming a live session that is not
// suspended closes that session's old connection without a notice and
// takes it over; client_resumed runs, client_suspended does not.
func TestResumeTakesOverLive(t *testing.T) {
	c := startContract(t, resumeSession)
	old := c.raw(t, "idlen")
	r, tok := loginWithToken(t, old, "mia")
	w := c.raw(t, "idlen")
	w.Send(resumeFrame(tok))
	w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumed)})
	old.ExpectClosed()
	w.Send(req(cWho, 2, nil))
	if who := decodeWho(t, w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})); who.SessionID != r.SessionID {
		t.Fatalf("took over %d, want %d", who.SessionID, r.SessionID)
	}
	c.Logs.WaitFor(t, "client_resumed", "player_id", "mia")
	if c.Logs.Find("client_suspended", "player_id", "mia") >= 0 {
		t.Fatal("client_suspended ran for a take-over")
	}
}

// TestResumeWindowExpires: a session not resumed within resume_window
// closes with its connection's original reason (Disconnected as usual),
// and its token is no good after.
func TestResumeWindowExpires(t *testing.T) {
	c := startContract(t, "  resume_window: 300ms")
	w := c.raw(t, "idlen")
	_, tok := loginWithToken(t, w, "ned")
	w.NC.Close()
	c.Logs.WaitFor(t, "client_suspended", "player_id", "ned")
	c.Logs.WaitFor(t, "client_disconnected", "player_id", "ned", "extra", "closed")
	late := c.raw(t, "idlen")
	late.Send(resumeFrame(tok))
	late.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumeFailed)})
}

// TestIdleTimeoutSuspends: an idle bound session gets its
// session.idle_timeout notice, and is suspended, not closed.
func TestIdleTimeoutSuspends(t *testing.T) {
	c := startContract(t, "  resume_window: 5s\n  idle_timeout: 300ms")
	w := c.raw(t, "idlen")
	_, tok := loginWithToken(t, w, "ola")
	w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionIdleTimeout)})
	w.ExpectClosed()
	c.Logs.WaitFor(t, "client_suspended", "player_id", "ola")
	again := c.raw(t, "idlen")
	again.Send(resumeFrame(tok))
	again.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumed)})
}

// TestSuspendedEndsAtOnce: a kick, a duplicate login under kick_old and a
// drain end a suspended session at once (reasons kicked, kicked,
// draining).
func TestSuspendedEndsAtOnce(t *testing.T) {
	c := startContract(t, resumeSession+"\n  shutdown_grace: 2s")
	kicker := c.raw(t, "idlen")
	loginWithToken(t, kicker, "kicker")

	suspend := func(user string) ref {
		t.Helper()
		w := c.raw(t, "delimiter")
		r, _ := loginWithToken(t, w, user)
		w.NC.Close()
		c.Logs.WaitFor(t, "client_suspended", "player_id", user)
		return r
	}
	r := suspend("pam")
	kicker.Send(req(cKick, 2, map[string]any{"ref": r, "reason": "out"}))
	kicker.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2, Body: []byte(`{"code":null,"ok":true}`)})
	c.Logs.WaitFor(t, "client_disconnected", "player_id", "pam", "extra", "kicked")

	suspend("quin")
	dup := c.raw(t, "idlen")
	loginWithToken(t, dup, "quin") // kick_old
	c.Logs.WaitFor(t, "client_disconnected", "player_id", "quin", "extra", "kicked")

	suspend("rex")
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop() }()
	// The live sessions keep the drain going for its grace (2 s); the
	// suspended one ends at its start.
	c.Logs.WaitFor(t, "client_disconnected", "player_id", "rex", "extra", "draining")
	select {
	case <-stopped:
		t.Fatal("the suspended session ended only with the drain")
	default:
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// TestSuspendedQueueOverflow: a push that overflows a suspended session's
// queue ends the session as a slow consumer.
func TestSuspendedQueueOverflow(t *testing.T) {
	c := startContract(t, resumeSession+"\n  outbound_queue: 2")
	pusher := c.raw(t, "idlen")
	loginWithToken(t, pusher, "pusher")
	w := c.raw(t, "idlen")
	r, _ := loginWithToken(t, w, "sue")
	w.NC.Close()
	c.Logs.WaitFor(t, "client_suspended", "player_id", "sue")
	pusher.Send(req(cPushMe, 2, map[string]any{"ref": r, "count": 3}))
	got := pusher.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})
	if string(got.Body) != `["ok","ok","client_rpc.queue_full"]` {
		t.Fatalf("pushes: %s", got.Body)
	}
	c.Logs.WaitFor(t, "client_disconnected", "player_id", "sue", "extra", "slow_consumer")
}
