package acceptance

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/statesync"
)

// This file holds docs/rooms.md §15's tick tests and the small harness that
// rooms_input_test.go and rooms_errors_test.go share: a real gateway whose
// lobby (testdata/rooms_tick_lobby.lua) logs in, makes rooms of any kind and
// asks a room's methods through its {room = id} address, and members that
// track their room's state with a statesync.Tracker.

// Lobby routes of rooms_tick_lobby.lua, and the reserved room routes.
const (
	rtLogin = 1
	rtMake  = 2
	rtAsk   = 3
	rtEnter = 4
	rtHold  = 5

	rtRoomState = 65520
	rtRoomJoin  = 65522
)

// rtConfig is a config with the lobby and the room kinds of kinds (YAML
// items of actors:, indented by two spaces).
func rtConfig(node, kinds string) string {
	return fmt.Sprintf(`node: {name: %s}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: lobby}
log: {format: json, level: info}
actors:
  - name: lobby
    script: %s
    rpc:
      routes:
        - {id: 1, name: login, binding: login, requires_auth: false}
        - {id: 2, name: make, binding: make}
        - {id: 3, name: ask, binding: ask}
        - {id: 4, name: enter, binding: enter}
        - {id: 5, name: hold, binding: hold}
%s`, node, rtScript("rooms_tick_lobby.lua"), kinds)
}

// rtScript is the absolute path of a script in testdata.
func rtScript(name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return p
}

// rtWorld is a started gateway, a context bounding the test, and an
// observer: a logged-in client in no room, who asks rooms through the lobby.
type rtWorld struct {
	t   *testing.T
	s   *wiretest.Server
	ctx context.Context
	obs *rtMember
}

func rtStart(t *testing.T, node, kinds string) *rtWorld {
	t.Helper()
	s := wiretest.Start(t, "shield.yaml", rtConfig(node, kinds), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	w := &rtWorld{t: t, s: s, ctx: ctx}
	w.obs = w.login("observer")
	return w
}

// rtMember is a logged-in client: its room's state frames go through a
// Tracker (updates and errors kept), and the pushes on the routes given
// at login are kept in order.
type rtMember struct {
	name   string
	c      *client.Client
	mu     sync.Mutex
	tr     statesync.Tracker
	ups    []statesync.Update
	errs   []error
	pushes map[uint32][][]byte
}

// login dials the game listener and logs user in, keeping the pushes on
// routes.
func (w *rtWorld) login(user string, routes ...uint32) *rtMember {
	w.t.Helper()
	c, err := client.Dial(w.ctx, w.s.Addr("game"), client.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	m := &rtMember{name: user, c: c, pushes: map[uint32][][]byte{}}
	c.OnPush(rtRoomState, func(body []byte) {
		m.mu.Lock()
		defer m.mu.Unlock()
		u, err := m.tr.Receive(body)
		if err != nil {
			m.errs = append(m.errs, err)
		}
		m.ups = append(m.ups, u)
	})
	for _, r := range routes {
		c.OnPush(r, func(body []byte) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.pushes[r] = append(m.pushes[r], append([]byte(nil), body...))
		})
	}
	if err := c.Call(w.ctx, rtLogin, map[string]string{"user": user}, nil); err != nil {
		w.t.Fatalf("login %s: %v", user, err)
	}
	return m
}

// make creates a room of kind with params (nil: none) and returns its id.
func (w *rtWorld) make(kind string, params any) string {
	w.t.Helper()
	req := map[string]any{"kind": kind}
	if params != nil {
		req["params"] = params
	}
	var made struct{ Room string }
	if err := w.obs.c.Call(w.ctx, rtMake, req, &made); err != nil || made.Room == "" {
		w.t.Fatalf("make %s: %+v %v", kind, made, err)
	}
	return made.Room
}

// ask calls the room's method with arg through the lobby, decoding its
// first result into out.
func (w *rtWorld) ask(room, method string, arg, out any) {
	w.t.Helper()
	req := map[string]any{"room": room, "method": method}
	if arg != nil {
		req["arg"] = arg
	}
	if err := w.obs.c.Call(w.ctx, rtAsk, req, out); err != nil {
		w.t.Fatalf("ask %s of %s: %v", method, room, err)
	}
}

// join joins the room through the shield.room.join route and waits for the
// SNAPSHOT: only then may a client send inputs (§8.3 step 4).
func (w *rtWorld) join(m *rtMember, room string) {
	w.t.Helper()
	var joined struct{ Room string }
	if err := m.c.Call(w.ctx, rtRoomJoin, map[string]any{"room": room}, &joined); err != nil || joined.Room != room {
		w.t.Fatalf("%s joins %s: %+v %v", m.name, room, joined, err)
	}
	m.waitSnapshot(w.t, room)
}

// waitSnapshot waits until the member holds a state of room.
func (m *rtMember) waitSnapshot(t *testing.T, room string) {
	t.Helper()
	wiretest.Eventually(t, m.name+"'s SNAPSHOT of "+room, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, ok := m.tr.Version()
		return ok && m.tr.RoomID() == room
	})
}

// view is a copy of the member's state, its version (ok false without a
// state), its updates and the frames that failed to apply.
func (m *rtMember) view() (st map[string]any, v uint64, ok bool, ups []statesync.Update, errs []error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok = m.tr.Version()
	return statesync.Clone(m.tr.State()), v, ok, append([]statesync.Update(nil), m.ups...), append([]error(nil), m.errs...)
}

// pushed is the bodies pushed to the member on route so far.
func (m *rtMember) pushed(route uint32) [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.pushes[route]...)
}

// end is the member's END update, if one came.
func (m *rtMember) end() (statesync.Update, bool) {
	_, _, _, ups, _ := m.view()
	for _, u := range ups {
		if u.Kind == statesync.EndFrame {
			return u, true
		}
	}
	return statesync.Update{}, false
}

// rtWait polls cond every 10 ms for at most d.
func rtWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The tick tests.

const rtTickKinds = `  - name: clock
    script: %s
    room: {tick_hz: 20, idle_close: 0s}
`

// rtTick is one tick as rooms_tick_clock.lua records it: its number,
// room.dt, and shield.now() as room_tick began.
type rtTick struct {
	Tick int64 `json:"tick"`
	Dt   int64 `json:"dt"`
	At   int64 `json:"at"`
}

type rtTicks struct {
	Log  []rtTick `json:"log"`
	Hold *struct {
		After int64 `json:"after"`
		Start int64 `json:"start"`
		Stop  int64 `json:"stop"`
	} `json:"hold"`
}

// rtSlackMS covers the gap between the runtime reading the clock for a tick
// and room_tick reading shield.now() (whole milliseconds, under -race).
const rtSlackMS = 5

// checkTickLog checks the rules of §6 that hold whatever the load, and
// returns each tick's grid index (the sum of dt / period up to it):
//   - tick numbers are 1, 2, 3, ... with no gap;
//   - room.dt is 1000/tick_hz × (1 + skipped): a positive multiple of the
//     period;
//   - a tick's scheduled time is the latest grid time not after its start
//     (a grid time passed meanwhile is skipped and folded into dt, never run
//     late), so start - gridIndex·period, which is t0 plus the tick's
//     lateness, stays within one period over the whole run. A catch-up burst, a dt
//     that misses a skipped grid time, or a grid that drifts all break it.
func checkTickLog(t *testing.T, log []rtTick, periodMS int64) []int64 {
	t.Helper()
	grid := make([]int64, len(log))
	var g int64
	lo, hi := int64(1<<62), int64(-1<<62)
	for i, tk := range log {
		if tk.Tick != int64(i+1) {
			t.Fatalf("record %d is tick %d: tick numbers have gaps (§6)", i, tk.Tick)
		}
		if tk.Dt < periodMS || tk.Dt%periodMS != 0 {
			t.Fatalf("tick %d: room.dt %d is not a multiple of the %d ms period (§4.2)", tk.Tick, tk.Dt, periodMS)
		}
		g += tk.Dt / periodMS
		grid[i] = g
		off := tk.At - g*periodMS
		lo, hi = min(lo, off), max(hi, off)
	}
	if hi-lo >= periodMS+rtSlackMS {
		for i, tk := range log {
			t.Logf("tick %d dt %d at +%d grid %d offset %d", tk.Tick, tk.Dt, tk.At-log[0].At, grid[i], tk.At-grid[i]*periodMS-lo)
		}
		t.Fatalf("ticks are off their grid: start - grid·period spans %d ms, more than one %d ms period (§6)", hi-lo, periodMS)
	}
	return grid
}

// TestTickRate proves §6's tick rate at 20 Hz over 3 s: tick numbers have
// no gaps, and ticks plus skipped grid times (the sum of room.dt over the
// period) equal the grid times elapsed on the clock, ±1, with no drift;
// skipped grid times (allowed only when a tick starts late) stay rare.
func TestTickRate(t *testing.T) {
	w := rtStart(t, "gw-tick", fmt.Sprintf(rtTickKinds, rtScript("rooms_tick_clock.lua")))
	room := w.make("clock", nil)
	const periodMS, stretchMS = 50, 3000
	var got rtTicks
	time.Sleep(stretchMS * time.Millisecond)
	rtWait(t, 10*time.Second, "3 s of ticks", func() bool {
		w.ask(room, "ticks", nil, &got)
		n := len(got.Log)
		return n > 1 && got.Log[n-1].At-got.Log[0].At >= stretchMS
	})
	grid := checkTickLog(t, got.Log, periodMS)

	// Over the first 3 s of ticks: tick b is the last to start within
	// 3000 ms of tick 1.
	first := got.Log[0]
	b := 0
	for i, tk := range got.Log {
		if tk.At-first.At <= stretchMS {
			b = i
		}
	}
	ticks := int64(b)                // ticks run after tick 1
	elapsed := grid[b] - grid[0]     // grid times after tick 1's: ticks + skipped
	wall := got.Log[b].At - first.At // on the clock
	want := float64(wall) / periodMS // grid times that passed
	skipped := elapsed - ticks
	t.Logf("%d ticks + %d skipped = %d grid times in %d ms (%.2f periods)", ticks, skipped, elapsed, wall, want)
	if d := float64(elapsed) - want; d > 1+float64(rtSlackMS)/periodMS || d < -1-float64(rtSlackMS)/periodMS {
		t.Fatalf("ticks + skipped = %d, but %d ms are %.2f periods at 20 Hz: off by more than 1 (§6)", elapsed, wall, want)
	}
	if wall < stretchMS-3*periodMS {
		t.Fatalf("the 3 s stretch ends %d ms after tick 1: ticks stopped", wall)
	}
	if skipped*4 > elapsed {
		t.Fatalf("%d of %d grid times skipped: the room does not keep 20 Hz", skipped, elapsed)
	}
}

// TestLateTickSkips proves §6's late tick: a timer callback that holds the
// room's VM for 180 ms, from 25 ms after tick m, makes tick m+1 start once,
// late, with room.dt folding the grid times it passed (4 periods: 3
// skipped, or more on a loaded machine, never fewer); no tick runs during
// the hold and none bursts after it: the ticks after are back on the grid,
// one period apart.
func TestLateTickSkips(t *testing.T) {
	w := rtStart(t, "gw-late", fmt.Sprintf(rtTickKinds, rtScript("rooms_tick_clock.lua")))
	room := w.make("clock", nil)
	const periodMS = 50
	var got rtTicks
	rtWait(t, 10*time.Second, "5 ticks", func() bool {
		w.ask(room, "ticks", nil, &got)
		return len(got.Log) >= 5
	})
	var armed map[string]any
	w.ask(room, "stall", nil, &armed)
	rtWait(t, 10*time.Second, "the hold and 12 ticks after it", func() bool {
		w.ask(room, "ticks", nil, &got)
		return got.Hold != nil && int64(len(got.Log)) >= got.Hold.After+13
	})
	checkTickLog(t, got.Log, periodMS)
	h := got.Hold
	m, late := got.Log[h.After-1], got.Log[h.After] // tick m armed the timer; tick m+1 follows the hold
	t.Logf("hold %d..%d ms after tick %d; tick %d at +%d, dt %d", h.Start-m.At, h.Stop-m.At, m.Tick, late.Tick, late.At-m.At, late.Dt)
	if h.Stop-h.Start < 180 || h.Start-m.At < 25 {
		t.Fatalf("the hold ran %d..%d ms after tick %d: want from 25 ms, 180 ms long", h.Start-m.At, h.Stop-m.At, m.Tick)
	}
	if late.At < h.Stop {
		t.Fatalf("tick %d started at +%d, during the hold (+%d..+%d): a tick waits for the run in progress", late.Tick, late.At-m.At, h.Start-m.At, h.Stop-m.At)
	}
	if skipped := late.Dt/periodMS - 1; skipped < 3 {
		t.Fatalf("tick %d after a 180 ms hold from 25 ms past tick %d: dt %d ms, %d skipped; want at least 4 periods (3 skipped): the grid times 100, 150 and 200 ms passed", late.Tick, m.Tick, late.Dt, skipped)
	}
	// No burst: tick m+1+j is on a grid time at least j periods after tick
	// m+1's, so it starts more than j-1 periods after it; a catch-up would
	// run several ticks at once.
	onGrid := 0
	for j := 1; j <= 10; j++ {
		next := got.Log[h.After+int64(j)]
		if gap := next.At - late.At; gap <= int64(j-1)*periodMS-rtSlackMS {
			t.Fatalf("tick %d started %d ms after the late tick %d: a burst, not the grid (§6: no catch-up)", next.Tick, gap, late.Tick)
		}
		if next.Dt == periodMS {
			onGrid++
		}
	}
	if onGrid < 8 {
		t.Fatalf("only %d of the 10 ticks after the late one have dt %d: not back on the grid", onGrid, periodMS)
	}
}
