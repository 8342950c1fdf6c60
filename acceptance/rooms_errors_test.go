package acceptance

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/statesync"
)

// docs/rooms.md §15's tick error tests (§10.2): a tick fails when room_tick
// raises, runs past tick_budget, or leaves a state the walk of §7.1 refuses.
// Each failure is an incident (one "handler failed" line with incident= and
// task="room_tick <id> tick <n>"); the failed tick's request inputs are
// answered client_rpc.handler_failed with the incident; nothing is synced
// for it; then on_tick_error close ends the room (members leave with
// room_closed, END's message "internal error (incident <id>)") and continue
// goes on, closing after 5 × tick_hz failures in a row. The harness is in
// rooms_harness_test.go; the rooms run testdata/rooms_errors_boom.lua.

// Routes of the error kinds (room_input).
const (
	reBoomIn   = 3101
	reBoomGoIn = 3102
	reSlowIn   = 3103
)

func reStart(t *testing.T, node string) *roomsRig {
	const script = "rooms_errors_boom.lua"
	return startRooms(t, roomsConf{node: node, timeout: 60 * time.Second, kinds: roomKind("boom", script,
		"tick_hz: 20, idle_close: 0s", "{id: 3101, name: boom_in, room_input: true}") +
		roomKind("boomgo", script, "tick_hz: 20, idle_close: 0s, on_tick_error: continue",
			"{id: 3102, name: boomgo_in, room_input: true}") +
		roomKind("boomloop", script, "tick_hz: 4, idle_close: 0s, on_tick_error: continue") +
		roomKind("slow", script, "tick_hz: 20, idle_close: 0s, tick_budget: 20ms",
			"{id: 3103, name: slow_in, room_input: true}")})
}

var (
	reIncidentID = regexp.MustCompile(`^[0-9a-f]{16}$`)
	reInternal   = regexp.MustCompile(`^internal error \(incident [0-9a-f]{16}\)$`)
)

// failingTick waits for room_tick's own "tick failing" line of room and
// returns the tick's number.
func (w *roomsRig) failingTick(room, how string) string {
	w.t.Helper()
	i := w.s.Logs.WaitFor(w.t, "tick failing", "room", room, "how", how)
	return w.s.Logs.Entry(i).Attrs["tick"]
}

// incident checks the incident line of the room's failed tick (§10.2): a
// "handler failed" line of the room with an incident id, task
// "room_tick <id> tick <n>", an error that contains errText and, for an
// error raised in Lua (traceback true), its traceback. It returns the
// incident id ("" when there is no line).
func (w *roomsRig) incident(room, tick, errText string, traceback bool) string {
	w.t.Helper()
	i := -1
	for deadline := time.Now().Add(5 * time.Second); i < 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		i = w.s.Logs.Find("handler failed", "room", room)
	}
	if i < 0 {
		w.t.Errorf("no incident line (\"handler failed\" with room=%s) for the failed tick %s (§10.2: each failure is an incident)", room, tick)
		return ""
	}
	e := w.s.Logs.Entry(i)
	inc := e.Attrs["incident"]
	if !reIncidentID.MatchString(inc) {
		w.t.Errorf("incident line %v: incident %q is not 16 hex digits", e.Attrs, inc)
	}
	if want := "room_tick " + room + " tick " + tick; e.Attrs["task"] != want {
		w.t.Errorf("incident line: task %q, want %q (§10.2)", e.Attrs["task"], want)
	}
	if !strings.Contains(e.Attrs["error"], errText) {
		w.t.Errorf("incident line: error %q, want it to contain %q", e.Attrs["error"], errText)
	}
	if traceback && !strings.Contains(e.Attrs["traceback"], "rooms_errors_boom.lua") {
		w.t.Errorf("incident line %v has no traceback", e.Attrs)
	}
	return inc
}

// internalError is what a client is told of an incident (§8.2, §10.2).
func internalError(inc string) string { return "internal error (incident " + inc + ")" }

// checkAnswer checks a failed tick's request input's answer:
// client_rpc.handler_failed with the tick's incident.
func checkAnswer(t *testing.T, err error, inc string) {
	t.Helper()
	var ce *codes.Error
	want := internalError(inc)
	if inc == "" {
		want = "internal error (incident <16 hex digits>)"
	}
	if !errors.As(err, &ce) || ce.Code != codes.HandlerFailed || !reInternal.MatchString(ce.Message) || inc != "" && ce.Message != want {
		t.Errorf("the failed tick's request input was answered %v; want client_rpc.handler_failed %q (§10.2)", err, want)
	}
}

// checkClosedEnd waits for the member's END and checks it: room_closed,
// with the incident in its message; no state frame came for the failed
// tick, nor any frame that did not apply.
func (w *roomsRig) checkClosedEnd(m *roomMember, tick, inc string) {
	w.t.Helper()
	waitFor(w.t, 10*time.Second, m.name+"'s END", func() bool { _, ok := m.end(); return ok })
	u, _ := m.end()
	if u.Reason != "room_closed" {
		w.t.Errorf("%s's END reason %q, want room_closed", m.name, u.Reason)
	}
	switch {
	case inc != "" && u.Message != internalError(inc):
		w.t.Errorf("%s's END message %q, want %q (§8.2, §10.2)", m.name, u.Message, internalError(inc))
	case !reInternal.MatchString(u.Message):
		w.t.Errorf("%s's END message %q, want \"internal error (incident <16 hex digits>)\" (§8.2, §10.2)", m.name, u.Message)
	}
	_, _, _, ups, errs := m.view()
	for _, up := range ups {
		if up.Kind != statesync.EndFrame && strconv.FormatUint(up.Version, 10) == tick {
			w.t.Errorf("%s got a state frame of version %s, the failed tick: nothing is synced for it", m.name, tick)
		}
	}
	if len(errs) > 0 {
		w.t.Errorf("%s's state frames did not apply: %v", m.name, errs)
	}
}

// checkGone checks that a closed room's id is room_not_found.
func (w *roomsRig) checkGone(room string) {
	w.t.Helper()
	err := w.observer().c.Call(w.ctx, roomsAsk, map[string]any{"room": room, "method": "anything"}, nil)
	if code, _ := codes.CodeOf(err); code != codes.RoomNotFound {
		w.t.Errorf("asking the closed room %s: %v, want client_rpc.room_not_found", room, err)
	}
}

// checkWindow checks a member's state of rooms_errors_boom.lua at its
// version v: clock = v, and recent holds exactly v-2, v-1 and v. A delta
// that re-applies or misses a version's changes breaks it.
func checkWindow(t *testing.T, who string, st map[string]any, v uint64) {
	t.Helper()
	recent, _ := st["recent"].(map[string]any)
	want := map[string]any{}
	for k := int64(v) - 2; k <= int64(v); k++ {
		if k >= 1 {
			want[strconv.FormatInt(k, 10)] = true
		}
	}
	if st["clock"] != int64(v) || fmt.Sprint(recent) != fmt.Sprint(want) {
		t.Errorf("%s's state at version %d: clock %v, recent %v; want clock %d, recent %v", who, v, st["clock"], recent, v, want)
	}
}

// TestTickRaises proves that a raising room_tick is contained (§10.2).
// close (boom): the request input that made the tick raise is answered
// handler_failed with the incident, the incident line names the tick, the
// member gets END room_closed with the incident, the room's id is
// room_not_found, the member is home again, and another room of the same
// kind ticks on. continue (boomgo): the room goes on, the failed tick's
// changes reach the member with the next version (none is sent for the
// failed tick itself), and the member's state stays exact; boomloop, which
// raises at every tick, closes after 5 × tick_hz (20) failures in a row.
func TestTickRaises(t *testing.T) {
	w := reStart(t, "gw-raise")
	loop := w.make("boomloop", map[string]any{"always": true}) // fails from its first tick
	dave := w.player("dave")
	w.join(dave, loop)
	pit, calm := w.make("boom", nil), w.make("boom", nil)
	alice, carol := w.player("alice"), w.player("carol")
	w.join(alice, pit)
	w.join(carol, calm)
	goRoom := w.make("boomgo", nil)
	bob := w.player("bob")
	w.join(bob, goRoom)

	// on_tick_error: close.
	err := alice.c.Call(w.ctx, reBoomIn, map[string]bool{"boom": true}, nil)
	tick := w.failingTick(pit, "boom")
	inc := w.incident(pit, tick, "boom at tick "+tick, true)
	checkAnswer(t, err, inc)
	w.checkClosedEnd(alice, tick, inc)
	w.checkGone(pit)
	var made struct{ Room string }
	if err := alice.c.Call(w.ctx, roomsMake, map[string]any{"kind": "boom"}, &made); err != nil {
		t.Errorf("alice, home again after the room closed: %v", err)
	}
	_, v0, _, _, _ := carol.view()
	waitFor(t, 10*time.Second, "the other room's ticks", func() bool {
		_, v, _, _, _ := carol.view()
		return v >= v0+5
	})
	if u, ok := carol.end(); ok {
		t.Errorf("carol, in another room of the kind, got END %+v", u)
	}

	// on_tick_error: continue.
	err = bob.c.Call(w.ctx, reBoomGoIn, map[string]bool{"boom": true}, nil)
	tick2 := w.failingTick(goRoom, "boom")
	inc2 := w.incident(goRoom, tick2, "boom at tick "+tick2, true)
	checkAnswer(t, err, inc2)
	n2, _ := strconv.ParseUint(tick2, 10, 64)
	waitFor(t, 10*time.Second, "bob's state past the failed tick", func() bool {
		_, v, _, _, errs := bob.view()
		return v >= n2+3 || len(errs) > 0
	})
	st, v, _, ups, errs := bob.view()
	if len(errs) > 0 {
		t.Errorf("bob's state frames after the failed tick %d did not apply: %v", n2, errs)
	} else {
		checkWindow(t, "bob", st, v)
		if st["failed_at"] != int64(n2) {
			t.Errorf("bob's state: failed_at %v, want %d: the failed tick's changes are synced at the next walk", st["failed_at"], n2)
		}
	}
	for _, u := range ups {
		if u.Kind != statesync.EndFrame && u.Version == n2 {
			t.Errorf("bob got a state frame of version %d, the failed tick: nothing is synced for it", n2)
		}
		if u.Kind == statesync.EndFrame {
			t.Errorf("bob's room closed on one failure under on_tick_error continue: END %+v", u)
		}
	}

	// continue, failing at every tick: closed after 20 in a row.
	waitFor(t, 15*time.Second, "dave's END", func() bool { _, ok := dave.end(); return ok })
	if n := w.s.Logs.Count("tick failing", "room", loop); n != 20 {
		t.Errorf("boomloop closed after %d failed ticks, want 5 × tick_hz = 20", n)
	}
	last := strconv.Itoa(w.s.Logs.Count("tick failing", "room", loop))
	w.checkClosedEnd(dave, last, "")
	w.checkGone(loop)
}

// TestTickBudget proves that a room_tick that runs past tick_budget (20 ms
// here, at 20 Hz) is stopped, and that this is a tick error (§6, §10.2):
// an incident line naming the tick, the request input answered
// handler_failed with it, and, under on_tick_error close, END room_closed.
func TestTickBudget(t *testing.T) {
	w := reStart(t, "gw-budget")
	room := w.make("slow", nil)
	eve := w.player("eve")
	w.join(eve, room)
	err := eve.c.Call(w.ctx, reSlowIn, map[string]bool{"spin": true}, nil)
	tick := w.failingTick(room, "spin")
	inc := w.incident(room, tick, "", false)
	checkAnswer(t, err, inc)
	w.checkClosedEnd(eve, tick, inc)
	w.checkGone(room)
}

// TestStateWalkFails proves that a state the walk of §7.1 refuses (a
// function in room.state) fails the tick (§10.2): the incident line has the
// walk's error naming the value's JSON Pointer and names the tick, the
// request input is answered handler_failed with it, no state frame is sent
// for the tick, and, under on_tick_error close, the member gets END
// room_closed.
func TestStateWalkFails(t *testing.T) {
	w := reStart(t, "gw-walk")
	room := w.make("boom", nil)
	frank := w.player("frank")
	w.join(frank, room)
	err := frank.c.Call(w.ctx, reBoomIn, map[string]bool{"bad": true}, nil)
	tick := w.failingTick(room, "bad")
	inc := w.incident(room, tick, "room state: /cb: a function cannot be synced", false)
	checkAnswer(t, err, inc)
	w.checkClosedEnd(frank, tick, inc)
	w.checkGone(room)
}
