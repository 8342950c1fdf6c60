package acceptance

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// These tests guard SPEC §4, §5 and §7 rules through the real gateway, the
// real runtime and the contract services (testdata/contract.lua), where
// the luavm and service tests see only a recording gateway.

// loginRaw logs a raw connection in as user (bound to the hall) and returns
// its ref; frames other than the login's answer (a resume token) are
// skipped.
func loginRaw(t testing.TB, w *transcript, user string) ref {
	t.Helper()
	w.Send(req(cLogin, 1, map[string]string{"user": user}))
	for {
		f, err := w.Next()
		if err != nil {
			t.Fatalf("login %s: %v; seen %v", user, err, w.Seen)
		}
		if f.Kind == envelope.Response && f.RequestID == 1 {
			return decodeRef(t, f)
		}
	}
}

// kickResult is the hall's kick answer: what shield.client.kick returned.
type kickResult struct {
	OK   bool    `json:"ok"`
	Code *string `json:"code"`
}

// TestKickThroughGateway (SPEC §7, §8): shield.client.kick through the real
// gateway runs the ref rows of §7 in order and refuses with their codes,
// touching nothing; a kick that passes sends the session.kicked notice
// whose message is the kick's reason, closes the session, counts it as
// kicked and runs client_disconnected with reason kicked.
func TestKickThroughGateway(t *testing.T) {
	c := startContract(t, "")
	kicker := c.raw(t, "idlen")
	loginRaw(t, kicker, "kicker")
	victim := c.raw(t, "idlen")
	v := loginRaw(t, victim, "victim")

	kick := func(id uint64, r ref) kickResult {
		t.Helper()
		kicker.Send(req(cKick, id, map[string]any{"ref": r, "reason": "cheating " + strconv.FormatUint(id, 10)}))
		var k kickResult
		if err := json.Unmarshal(kicker.Expect(envelope.Frame{Kind: envelope.Response, RequestID: id}).Body, &k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	stale, other, imposter, gone := v, v, v, v
	stale.Epoch++
	other.Gateway = "gw-elsewhere"
	imposter.PlayerID = "someone-else"
	gone.SessionID = v.SessionID ^ 1
	for i, tc := range []struct {
		name string
		r    ref
		code codes.Code
	}{
		{"another gateway", other, codes.GatewayMismatch},
		{"no such session", gone, codes.SessionNotFound},
		{"a stale epoch", stale, codes.EpochExpired},
		{"another player", imposter, codes.PlayerMismatch},
	} {
		k := kick(uint64(10+i), tc.r)
		if k.OK || k.Code == nil || *k.Code != string(tc.code) {
			t.Errorf("kick with %s: %+v, want nil, %s", tc.name, k, tc.code)
		}
	}
	// None of those touched the victim.
	victim.Send(req(cWho, 2, nil))
	if got := decodeWho(t, victim.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})); got.SessionID != v.SessionID {
		t.Fatalf("victim after refused kicks: %+v", got)
	}
	if n := c.ClosedTotal("kicked"); n != 0 {
		t.Fatalf("refused kicks closed %v sessions", n)
	}

	if k := kick(20, v); !k.OK || k.Code != nil {
		t.Fatalf("kick: %+v, want true", k)
	}
	n := victim.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionKicked)})
	if n.Message != "cheating 20" {
		t.Fatalf("kicked notice message %q, want the kick's reason", n.Message)
	}
	victim.ExpectClosed()
	wiretest.Eventually(t, "the kick counted", func() bool { return c.ClosedTotal("kicked") == 1 })
	c.Logs.WaitFor(t, "client_disconnected", "player_id", "victim", "extra", "kicked")
	// The victim is gone now: a second kick finds no session.
	if k := kick(21, v); k.OK || k.Code == nil || *k.Code != string(codes.SessionNotFound) {
		t.Fatalf("kick of a closed session: %+v, want session_not_found", k)
	}
}

// TestSlowConsumerGetsNoNotice (SPEC §3, §7): a session that does not read
// is closed after write_timeout as a slow consumer without a notice: what
// it finally reads is pushes, then the end of the connection.
func TestSlowConsumerGetsNoNotice(t *testing.T) {
	c := startContract(t, "  write_timeout: 300ms")
	pusher := c.raw(t, "idlen")
	loginRaw(t, pusher, "pusher")
	victim := c.raw(t, "idlen")
	v := loginRaw(t, victim, "victim")

	// Push until the gateway gives up on the victim: each round is up to 64
	// notes of 32 KiB, refused as queue_full while the writer waits and as
	// session_not_found once it closed.
	closed := false
	for round := uint64(1); round <= 200 && !closed; round++ {
		pusher.Send(req(cPushMe, 100+round, map[string]any{"ref": v, "n": 32 << 10, "count": 64}))
		var out []string
		if err := json.Unmarshal(pusher.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 100 + round}).Body, &out); err != nil {
			t.Fatal(err)
		}
		for _, code := range out {
			if code == string(codes.SessionNotFound) {
				closed = true
			}
		}
	}
	if !closed {
		t.Fatal("the victim was never closed")
	}
	wiretest.Eventually(t, "slow_consumer counted", func() bool { return c.ClosedTotal("slow_consumer") == 1 })
	c.Logs.WaitFor(t, "client_disconnected", "player_id", "victim", "extra", "slow_consumer")

	// Read what reached the victim: pushes only, then the end (the last
	// push may be cut short: the write that timed out was partial).
	pushes := 0
	for i := 0; i < 100000; i++ {
		f, err := victim.Next()
		if err != nil {
			var pe *envelope.ProtocolError
			if !wiretest.PeerGone(err) && !(errors.As(err, &pe) && pe.Reason == envelope.ReasonTruncated) {
				t.Fatalf("after %d pushes: %v", pushes, err)
			}
			break
		}
		if f.Kind != envelope.Push || f.RouteID != cNote {
			t.Fatalf("a slow consumer got %v %q after %d pushes; want no notice", f.Kind, f.Code, pushes)
		}
		pushes++
	}
	if pushes == 0 {
		t.Fatal("no push reached the victim")
	}
}

// TestHandlersStartInArrivalOrder (SPEC §5): a session's frames are
// delivered in arrival order and its handlers start in that order,
// requests and notifies alike; a handler that suspends lets the next one
// start (its answer comes first).
func TestHandlersStartInArrivalOrder(t *testing.T) {
	c := startContract(t, "")
	w := c.raw(t, "idlen")
	loginRaw(t, w, "ann")
	const n = 30 // within max_inflight (32)
	frames := make([]envelope.Frame, 0, n)
	for i := 1; i <= n; i++ {
		if i%2 == 0 {
			frames = append(frames, notify(cMark, map[string]int{"v": i}))
		} else {
			frames = append(frames, req(cMark, uint64(i), map[string]int{"v": i}))
		}
	}
	w.Send(frames...)
	for i := 1; i <= n; i += 2 {
		w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: uint64(i)})
	}
	last := -1
	for i := 1; i <= n; i++ {
		at := c.Logs.WaitFor(t, "mark", "v", strconv.Itoa(i))
		if at < last {
			t.Fatalf("mark %d started before mark %d\n%s", i, i-1, c.Logs.Dump())
		}
		last = at
	}

	// A suspended handler lets the next start: whoami, sent after a sleep,
	// is answered first.
	w.Send(req(cSleep, 100, map[string]int{"ms": 300}), req(cWho, 101, nil))
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 101})
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 100, Body: []byte(`{"slept":300}`)})
}

// TestNewSessionUnbound (SPEC §4): a new session's target is its
// listener's entry service, with no player_id (null in JSON) and epoch 1,
// on every envelope.
func TestNewSessionUnbound(t *testing.T) {
	c := startContract(t, "")
	for _, env := range envelopes {
		t.Run(env, func(t *testing.T) {
			w := c.raw(t, env)
			w.Send(req(cWhoami, 1, nil))
			f := w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
			var m map[string]any
			if err := json.Unmarshal(f.Body, &m); err != nil {
				t.Fatal(err)
			}
			pid, present := m["player_id"]
			if !present || pid != nil || m["epoch"] != float64(1) || m["service"] != "lobby" {
				t.Fatalf("a new session: %s, want service lobby, player_id null, epoch 1", f.Body)
			}
			if id := m["session_id"].(float64); id < 1 || id >= 1<<53 {
				t.Fatalf("session_id %v", id)
			}
		})
	}
}

// TestHandlerSeconds (SPEC §9): every answered request is observed in
// shield_handler_seconds{service,route} once, under the route's name, with
// at least the time the handler took.
func TestHandlerSeconds(t *testing.T) {
	c := startContract(t, "")
	w := c.raw(t, "idlen")
	loginRaw(t, w, "hal")
	const n = 3
	for i := uint64(1); i <= n; i++ {
		w.Send(req(cSleep, 10+i, map[string]int{"ms": 100}))
		w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 10 + i})
	}
	count, sum := c.handlerSeconds(t, "hall", "sleep")
	if count != n || sum < 0.3 {
		t.Fatalf(`shield_handler_seconds{service="hall",route="sleep"}: count %d sum %v, want %d and at least 0.3 s`, count, sum, n)
	}
	if count, _ := c.handlerSeconds(t, "lobby", "login"); count != 1 {
		t.Fatalf(`shield_handler_seconds{service="lobby",route="login"}: count %d, want 1`, count)
	}
}

// handlerSeconds reads the shield_handler_seconds histogram of one service
// and route from the server's registry.
func (c *contract) handlerSeconds(t testing.TB, service, route string) (uint64, float64) {
	t.Helper()
	families, err := c.Srv.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "shield_handler_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["service"] == service && labels["route"] == route {
				return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	return 0, 0
}
