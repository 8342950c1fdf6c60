package acceptance

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// whoami is the hall's (or the lobby's) whoami answer.
type whoami struct {
	Service   string  `json:"service"`
	SessionID uint64  `json:"session_id"`
	Epoch     uint64  `json:"epoch"`
	PlayerID  *string `json:"player_id"`
}

func decodeWho(t testing.TB, f envelope.Frame) whoami {
	t.Helper()
	var w whoami
	if err := json.Unmarshal(f.Body, &w); err != nil {
		t.Fatalf("whoami %q: %v", f.Body, err)
	}
	return w
}

// TestPipelinedLogin (SPEC §5): while a session has no player_id its
// frames are judged one at a time, each after the previous request's
// answer: a login and the first authenticated request in one write both
// work, the second judged with the binding the login made (so it reaches
// the hall, as ann). A heartbeat between them is echoed at once, not held.
func TestPipelinedLogin(t *testing.T) {
	c := startContract(t, "")
	for _, env := range envelopes {
		t.Run(env, func(t *testing.T) {
			w := c.raw(t, env)
			user := "ann-" + env
			w.Send(req(cLogin, 1, map[string]string{"user": user}),
				envelope.Frame{Kind: envelope.Heartbeat},
				req(cWho, 2, nil))
			var login, who *envelope.Frame
			beat := false
			for login == nil || who == nil || !beat {
				f, err := w.Next()
				if err != nil {
					t.Fatalf("%v; seen %v", err, w.Seen)
				}
				switch {
				case f.Kind == envelope.Heartbeat:
					beat = true
				case f.Kind == envelope.Response && f.RequestID == 1:
					login = &f
				case f.Kind == envelope.Response && f.RequestID == 2:
					if login == nil {
						t.Fatalf("whoami answered before the login; seen %v", w.Seen)
					}
					who = &f
				default:
					t.Fatalf("unexpected frame; seen %v", w.Seen)
				}
			}
			r := decodeRef(t, *login)
			got := decodeWho(t, *who)
			if got.Service != "hall" || got.PlayerID == nil || *got.PlayerID != user || got.Epoch != r.Epoch || got.SessionID != r.SessionID {
				t.Fatalf("whoami after a pipelined login: %+v, login %+v", got, r)
			}
		})
	}
}

// TestPipelinedLoginCountsInflight: frames waiting behind a login count
// against max_inflight when they arrive, and past it get busy at once.
func TestPipelinedLoginCountsInflight(t *testing.T) {
	c := startContract(t, "  max_inflight: 2")
	w := c.raw(t, "idlen")
	w.Send(req(cLogin, 1, map[string]string{"user": "bea"}), req(cWho, 2, nil), req(cWho, 3, nil), req(cWho, 4, nil))
	busy := map[uint64]bool{}
	for answered := 0; answered < 4; answered++ {
		f, err := w.Next()
		if err != nil {
			t.Fatalf("%v; seen %v", err, w.Seen)
		}
		switch {
		case f.Kind == envelope.Error && f.Code == string(codes.Busy):
			busy[f.RequestID] = true
		case f.Kind == envelope.Response && (f.RequestID == 1 || f.RequestID == 2):
		default:
			t.Fatalf("unexpected frame; seen %v", w.Seen)
		}
	}
	if !busy[3] || !busy[4] || len(busy) != 2 {
		t.Fatalf("busy %v, want 3 and 4 (the login and the first waiting frame hold the two slots)", busy)
	}
}

// TestAuthTimeout (SPEC §4): a session with no player_id auth_timeout
// after it connected gets the session.auth_timeout notice and is closed
// (reason auth_timeout), heartbeats or not; a bound session is not.
func TestAuthTimeout(t *testing.T) {
	c := startContract(t, "  auth_timeout: 400ms")
	idler := c.raw(t, "typelen")
	bound := c.raw(t, "idlen")
	bound.Send(req(cLogin, 1, map[string]string{"user": "cid"}))
	bound.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	start := time.Now()
	for range 3 {
		idler.Send(envelope.Frame{Kind: envelope.Heartbeat})
		idler.Expect(envelope.Frame{Kind: envelope.Heartbeat})
		time.Sleep(50 * time.Millisecond) // paced heartbeats: a client keeping its connection alive
	}
	idler.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionAuthTimeout)})
	idler.ExpectClosed()
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("closed after %v, before auth_timeout", el)
	}
	c.Logs.WaitFor(t, "client_disconnected", "svc", "lobby", "extra", "auth_timeout")
	wiretest.Eventually(t, "auth_timeout counted", func() bool { return c.ClosedTotal("auth_timeout") == 1 })
	// The bound session outlives the timeout.
	bound.Send(req(cWho, 2, nil))
	bound.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})
}

// TestAuthFrameCap (SPEC §3): while a session has no player_id, a frame
// longer than auth_max_frame_bytes closes it (too_large), a frame
// pipelined behind a login too; after the login the listener's cap holds.
func TestAuthFrameCap(t *testing.T) {
	c := startContract(t, "  auth_max_frame_bytes: 1024")
	pad := map[string]string{"v": string(make([]byte, 0)) + fmt.Sprintf("%01500d", 0)}

	before := c.ProtocolErrors("too_large")
	w := c.raw(t, "idlen")
	w.Send(req(cMarkL, 1, pad))
	w.ExpectClosed()

	pipelined := c.raw(t, "idlen")
	pipelined.Send(req(cLogin, 1, map[string]string{"user": "dee"}), req(cMark, 2, pad))
	for {
		f, err := pipelined.Next()
		if err != nil {
			break // closed: what we want; the login may or may not have been answered first
		}
		if f.Kind == envelope.Response && f.RequestID == 2 {
			t.Fatal("a long frame pipelined behind a login passed the pre-login cap")
		}
	}
	wiretest.Eventually(t, "too_large counted twice", func() bool { return c.ProtocolErrors("too_large") == before+2 })

	bound := c.raw(t, "idlen")
	bound.Send(req(cLogin, 1, map[string]string{"user": "eve"}))
	bound.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	bound.Send(req(cMark, 2, pad))
	bound.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})
}

// TestStaleFrameOfClosedSession (SPEC §4): a frame queued for a VM does
// not run once its session closed; it counts as session_not_found.
func TestStaleFrameOfClosedSession(t *testing.T) {
	c := startContract(t, "")
	w := c.raw(t, "idlen")
	w.Send(req(cLogin, 1, map[string]string{"user": "fay"}))
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	w.Send(req(cSpin, 2, map[string]int{"ms": 300}), notify(cMark, map[string]string{"v": "after-close"}))
	c.Logs.WaitFor(t, "spinning", "ms", "300")
	w.NC.Close()
	wiretest.Eventually(t, "the queued notify answered as session_not_found", func() bool {
		return c.RequestsTotal("hall", "mark", string(codes.SessionNotFound)) == 1
	})
	if c.Logs.Find("mark", "v", "after-close") >= 0 {
		t.Fatal("a frame of a closed session ran")
	}
}

// TestStaleFrameAfterRebind (SPEC §4): a request queued before its
// session was rebound gets client_rpc.epoch_expired instead of running; a
// frame sent after the rebind runs under the new binding.
func TestStaleFrameAfterRebind(t *testing.T) {
	c := startContract(t, "")
	w := c.raw(t, "idlen")
	w.Send(req(cLogin, 1, map[string]string{"user": "gus"}))
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	// The spin rebinds the session (to hal) when it ends; whoami waits
	// behind it in the hall's lane with the old epoch.
	w.Send(req(cSpin, 2, map[string]any{"ms": 300, "then_user": "hal"}), req(cWho, 3, nil))
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})
	w.Expect(envelope.Frame{Kind: envelope.Error, RequestID: 3, Code: string(codes.EpochExpired)})
	w.Send(req(cWho, 4, nil))
	got := decodeWho(t, w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 4}))
	if got.PlayerID == nil || *got.PlayerID != "hal" || got.Epoch != 3 {
		t.Fatalf("after the rebind: %+v", got)
	}
	wiretest.Eventually(t, "epoch_expired counted", func() bool {
		return c.RequestsTotal("hall", "whoami", string(codes.EpochExpired)) == 1
	})
}

// TestClientBoundRunsFirst (SPEC §4): after a bind the new target's
// client_bound runs before any frame of the session under the new epoch.
func TestClientBoundRunsFirst(t *testing.T) {
	c := startContract(t, "")
	w := c.raw(t, "idlen")
	w.Send(req(cLogin, 1, map[string]string{"user": "ida"}), notify(cMark, map[string]string{"v": "first-in-hall"}))
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	bound := c.Logs.WaitFor(t, "client_bound", "svc", "hall", "player_id", "ida", "epoch", "2")
	mark := c.Logs.WaitFor(t, "mark", "v", "first-in-hall")
	if bound > mark {
		t.Fatalf("the hall ran the session's frame (log %d) before client_bound (log %d)", mark, bound)
	}
}
