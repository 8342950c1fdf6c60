package acceptance

import (
	"testing"
	"time"
)

// docs/rooms.md §15's tick tests (§6). The harness is in
// rooms_harness_test.go; the rooms run testdata/rooms_tick_clock.lua.

// rtStart is a gateway with the room kind "clock", at 20 Hz.
func rtStart(t *testing.T, node string) *roomsRig {
	return startRooms(t, roomsConf{node: node, timeout: 60 * time.Second,
		kinds: roomKind("clock", "rooms_tick_clock.lua", "tick_hz: 20, idle_close: 0s")})
}

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
	w := rtStart(t, "gw-tick")
	room := w.make("clock", nil)
	const periodMS, stretchMS = 50, 3000
	var got rtTicks
	time.Sleep(stretchMS * time.Millisecond)
	waitFor(t, 10*time.Second, "3 s of ticks", func() bool {
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
	w := rtStart(t, "gw-late")
	room := w.make("clock", nil)
	const periodMS = 50
	var got rtTicks
	waitFor(t, 10*time.Second, "5 ticks", func() bool {
		w.ask(room, "ticks", nil, &got)
		return len(got.Log) >= 5
	})
	var armed map[string]any
	w.ask(room, "stall", nil, &armed)
	waitFor(t, 10*time.Second, "the hold and 12 ticks after it", func() bool {
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
