package acceptance

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestControlLaneBound: a flood of connections that open and close while
// their entry service's VM is busy cannot grow its control lane without
// bound (docs/architecture.md "The control lane's bound"): once the lane
// holds session.max_sessions messages, new sessions to it are refused at
// accept and counted in shield_limits_hit_total{limit="control_lane"}, the
// lane stays within 3 x max_sessions, and when the VM is free it serves
// every message waiting and the listener admits sessions again.
func TestControlLaneBound(t *testing.T) {
	const maxSessions = 10
	e := startEdge(t, "  max_sessions: 10")
	depth := func() float64 { return controlDepth(t, e.Server, "spin") }
	hitBefore := e.LimitHits("control_lane")

	spinner := e.raw(t, "spin")
	// The spin outlasts the churn below with room to spare on a loaded
	// machine (under -race, 300 connections took up to 3 s): a lane
	// served before the churn ended would accept its later sessions.
	const spin = 8 * time.Second
	spinner.Send(envelope.Frame{Kind: envelope.Request, RouteID: rSpin, RequestID: 1, Body: []byte(`{"ms":8000}`)})
	e.Logs.WaitFor(t, "spinning", "ms", "8000")
	spun := time.Now()

	// 300 connections in turn, each waiting for its heartbeat's echo (or
	// the gateway's close) before it closes, so that each one accepted was
	// a session whose client_disconnected now waits behind the spin.
	heartbeat := []byte{0, 0, 0, 8, 1, 0, 0, 0, 0, 0, 0, 0}
	peak := 0.0
	for i := range 300 {
		nc, err := net.DialTimeout("tcp", e.Addr("spin"), patience)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		_ = nc.SetDeadline(time.Now().Add(patience))
		if _, err := nc.Write(heartbeat); err == nil {
			_, _ = io.ReadFull(nc, make([]byte, len(heartbeat))) // the echo, or EOF when refused
		}
		nc.Close()
		peak = max(peak, depth())
	}
	if took := time.Since(spun); took > spin-time.Second {
		t.Fatalf("the churn took %v, too close to the spin's %v to judge the bound", took, spin)
	}
	wiretest.Eventually(t, "every accepted session's close queued", func() bool {
		return e.Srv.Gateway.Sessions().Len() <= 1 // the spinner's
	})
	peak = max(peak, depth())
	if peak > 3*maxSessions {
		t.Fatalf("the control lane reached %v messages, past 3 x max_sessions = %d", peak, 3*maxSessions)
	}
	if peak < maxSessions {
		t.Fatalf("the control lane peaked at %v: the flood never reached its limit of %d", peak, maxSessions)
	}
	hits := e.LimitHits("control_lane") - hitBefore
	t.Logf("300 connections churned: the control lane peaked at %v messages, %v sessions refused", peak, hits)
	if hits < 300-3*maxSessions {
		t.Fatalf("%v sessions refused for the control lane, want at least %d", hits, 300-3*maxSessions)
	}

	time.Sleep(time.Until(spun.Add(spin))) // the spinner's read waits patience, not the spin
	spinner.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	wiretest.Eventually(t, "the control lane served", func() bool { return depth() == 0 })
	again := e.raw(t, "spin")
	again.Send(envelope.Frame{Kind: envelope.Request, RouteID: rSpin, RequestID: 2, Body: []byte(`{"ms":0}`)})
	again.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})
}

// TestControlLaneRefusesBind: a login that would bind a session to a
// service whose control lane is full fails with client_rpc.busy (its
// client_bound would wait behind the full lane), the lane stays within 3
// x max_sessions while logins churn, and once the service has served its
// lane the login binds again.
func TestControlLaneRefusesBind(t *testing.T) {
	const maxSessions = 10
	srv := startContract(t, "  max_sessions: 10")
	spinner := srv.client(t, "idlen", client.Options{})
	call(t, spinner, cLogin, map[string]string{"user": "spinner"}, nil)
	spun := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		spun <- spinner.Call(ctx, cSpin, map[string]int{"ms": 3000}, nil)
	}()
	srv.Logs.WaitFor(t, "spinning")
	busy, peak := 0, 0.0
	for i := range 40 {
		w := srv.raw(t, "idlen")
		w.Send(req(cLogin, 1, map[string]string{"user": fmt.Sprintf("churn-%d", i)}))
		f, err := w.Next()
		if err != nil {
			t.Fatalf("login %d: %v; seen %v", i, err, w.Seen)
		}
		switch {
		case f.Kind == envelope.Error && f.Code == string(codes.Busy):
			busy++
		case f.Kind == envelope.Response:
		default:
			t.Fatalf("login %d: %v", i, w.Seen)
		}
		w.NC.Close()
		peak = max(peak, controlDepth(t, srv.Server, "hall"))
	}
	if busy == 0 || peak > 3*maxSessions {
		t.Fatalf("%d of 40 logins refused busy, the lane peaked at %v: want some refused and at most %d", busy, peak, 3*maxSessions)
	}
	if err := <-spun; err != nil {
		t.Fatalf("spin: %v", err)
	}
	wiretest.Eventually(t, "hall's control lane served", func() bool { return controlDepth(t, srv.Server, "hall") == 0 })
	w := srv.raw(t, "idlen")
	loginRaw(t, w, "after")
}

// TestControlLaneCrowdedResumeAndSuspend: while a service's control lane
// is full, a session of it whose connection drops is closed rather than
// suspended, and a resume into it fails with session.resume_failed but
// spends nothing: the same token resumes the session once the lane is
// served.
func TestControlLaneCrowdedResumeAndSuspend(t *testing.T) {
	c := startContract(t, "  max_sessions: 10\n  resume_window: 30s")
	away := c.raw(t, "idlen")
	_, awayTok := loginWithToken(t, away, "away")
	away.NC.Close()
	c.Logs.WaitFor(t, "client_suspended", "svc", "hall", "player_id", "away")
	live := c.raw(t, "idlen")
	loginWithToken(t, live, "live")

	spinner := c.client(t, "idlen", client.Options{})
	call(t, spinner, cLogin, map[string]string{"user": "spinner"}, nil)
	spun := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		spun <- spinner.Call(ctx, cSpin, map[string]int{"ms": 3000}, nil)
	}()
	c.Logs.WaitFor(t, "spinning")
	// Logins churn until hall is crowded: one is refused busy.
	for i := 0; ; i++ {
		if i == 40 {
			t.Fatal("40 logins and hall is still not crowded")
		}
		w := c.raw(t, "idlen")
		w.Send(req(cLogin, 1, map[string]string{"user": fmt.Sprintf("churn-%d", i)}))
		refused := false
		for done := false; !done; {
			f, err := w.Next()
			if err != nil {
				t.Fatalf("login %d: %v; seen %v", i, err, w.Seen)
			}
			switch {
			case f.Kind == envelope.Error && f.Code == string(codes.Busy):
				refused, done = true, true
			case f.Kind == envelope.Response:
				done = true
			}
		}
		w.NC.Close()
		if refused {
			break
		}
	}

	liveID := c.Srv.Gateway.Sessions().Player("live").ID
	live.NC.Close()
	wiretest.Eventually(t, "live's session closed, not suspended", func() bool {
		return c.Srv.Gateway.Sessions().Get(liveID) == nil
	})
	back := c.raw(t, "idlen")
	back.Send(resumeFrame(awayTok))
	if f := back.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumeFailed)}); !strings.Contains(f.Message, "overloaded") {
		t.Fatalf("resume into a crowded service: %q, want it to say overloaded", f.Message)
	}

	if err := <-spun; err != nil {
		t.Fatalf("spin: %v", err)
	}
	wiretest.Eventually(t, "hall's control lane served", func() bool { return controlDepth(t, c.Server, "hall") == 0 })
	again := c.raw(t, "idlen")
	again.Send(resumeFrame(awayTok))
	again.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumed)})
}
