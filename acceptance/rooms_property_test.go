package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/statesync"
)

// The gateway and the room of TestClientsTrackState, shared with
// clients/ts/test/room-property.test.ts: testdata/rooms_property.yaml (a
// template: propConfig fills it in), testdata/rooms_lobby.lua (the rooms tests' one lobby) and
// testdata/rooms_property_room.lua (the room kind "prop", 60 Hz, random
// changes each tick, the state's JSON pushed on propReport).
const (
	propLogin   = 1
	propMake    = 2
	propReport  = 3201
	propSetView = 3202
	propBallast = 3203
	propHeavy   = 3204
	propState   = 65520 // shield.room.state
	propJoin    = 65522 // shield.room.join

	propRooms   = 4   // rooms run at once
	propTicks   = 520 // ticks per room: 2,080 in all, 8.7 s at 60 Hz
	propHistory = 8   // rooms_property.yaml's room.history
)

// propConfig is testdata/rooms_property.yaml with every listener on a
// free port.
func propConfig(t *testing.T) string {
	t.Helper()
	tmpl, err := os.ReadFile("testdata/rooms_property.yaml")
	if err != nil {
		t.Fatal(err)
	}
	quoted := func(file string) string {
		abs, err := filepath.Abs(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(abs)
		return string(b)
	}
	return strings.NewReplacer(
		"{{GAME}}", "127.0.0.1:0", "{{TYPED}}", "127.0.0.1:0", "{{WEB}}", "127.0.0.1:0",
		"{{LOBBY}}", quoted("rooms_lobby.lua"), "{{ROOM}}", quoted("rooms_property_room.lua"),
	).Replace(string(tmpl))
}

// propNorm is a JSON value (from encoding/json, or a statesync tree) in
// the form both compare in: a JSON array is the map the state syncs it as
// (docs/rooms.md §7.1: keys "1".."n", a null hole absent), numbers are
// float64s (every synced integer is within 2^53, so exact), -0 is 0.
func propNorm(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e != nil {
				out[k] = propNorm(e)
			}
		}
		return out
	case []any:
		out := make(map[string]any, len(x))
		for i, e := range x {
			if e != nil {
				out[strconv.Itoa(i+1)] = propNorm(e)
			}
		}
		return out
	case int64:
		return float64(x)
	case float64:
		if x == 0 {
			return 0.0
		}
		return x
	}
	return v
}

// propFilter is what a member with view sees of tree, written from
// docs/rooms.md §7.4 (not with statesync.View, the code under test): a
// path under a prefix (or one) is seen; a proper ancestor of a prefix is
// seen when it holds a table, with only its visible entries; a scalar
// there is hidden. A nil view is everything; an empty one the root only.
func propFilter(tree map[string]any, view [][]string) map[string]any {
	if view == nil {
		return tree
	}
	out := map[string]any{}
	for k, v := range tree {
		whole := false
		var rests [][]string
		for _, p := range view {
			if p[0] != k {
				continue
			}
			if len(p) == 1 {
				whole = true
			} else {
				rests = append(rests, p[1:])
			}
		}
		switch {
		case whole:
			out[k] = v
		case len(rests) > 0:
			if m, ok := v.(map[string]any); ok {
				out[k] = propFilter(m, rests)
			}
		}
	}
	return out
}

func propCanon(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return string(b)
}

// propReportOf is one version's report: the room's state as JSON.
type propReportOf struct {
	raw  string         // shield.json.encode(room.state), as pushed
	tree map[string]any // propNorm of it
	full string         // propCanon(tree)
}

// propRoom is one room: the reports its members received (every member
// gets the same; the first to arrive is kept), and its members.
type propRoom struct {
	t    *testing.T
	id   string
	seed int64

	maxV atomic.Uint64 // the highest version reported

	mu      sync.Mutex
	reports map[uint64]*propReportOf
	hashes  map[uint64]uint64 // every version's report, hashed, kept to the end
	members []*propMember
	errs    []string
}

func (r *propRoom) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

func (r *propRoom) report(v uint64) *propReportOf {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reports[v]
}

// onReport takes a member's report push, keeps the first of each version
// and checks the others against it, then compares what members applied at
// that version and could not compare yet.
func (r *propRoom) onReport(from string, body []byte) {
	var rep struct {
		V    uint64 `json:"v"`
		JSON string `json:"json"`
	}
	if err := json.Unmarshal(body, &rep); err != nil {
		r.fail("%s: report %.80q: %v", from, body, err)
		return
	}
	h := fnv.New64a()
	h.Write([]byte(rep.JSON))
	sum := h.Sum64()
	r.mu.Lock()
	if have, ok := r.hashes[rep.V]; ok {
		r.mu.Unlock()
		if have != sum {
			r.fail("%s: report of version %d differs from another member's", from, rep.V)
		}
		return
	}
	r.mu.Unlock()
	var tree any
	if err := json.Unmarshal([]byte(rep.JSON), &tree); err != nil {
		r.fail("%s: report of version %d: %v", from, rep.V, err)
		return
	}
	m, ok := propNorm(tree).(map[string]any)
	if !ok {
		r.fail("%s: report of version %d is not an object: %.80s", from, rep.V, rep.JSON)
		return
	}
	p := &propReportOf{raw: rep.JSON, tree: m, full: propCanon(m)}
	r.mu.Lock()
	if _, ok := r.hashes[rep.V]; ok { // another member's, meanwhile
		r.mu.Unlock()
		return
	}
	r.reports[rep.V] = p
	r.hashes[rep.V] = sum
	members := r.members
	r.mu.Unlock()
	if rep.V%60 == 0 {
		r.prune(members)
	}
	for v := r.maxV.Load(); v < rep.V && !r.maxV.CompareAndSwap(v, rep.V); v = r.maxV.Load() {
	}
	for _, mem := range members {
		mem.compareLater(rep.V, p)
	}
}

// prune forgets the reports of versions below every member's: no member
// applies them any more.
func (r *propRoom) prune(members []*propMember) {
	low := uint64(1<<64 - 1)
	for _, m := range members {
		if _, _, v := m.snapshot(); v < low {
			low = v
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for v := range r.reports {
		if v < low {
			delete(r.reports, v)
		}
	}
}

// changedWithin reports whether the state changed at a version after b
// and before v (by the reports' hashes): a delta from b to v then covers
// versions the member was not sent.
func (r *propRoom) changedWithin(b, v uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	hb, ok := r.hashes[b]
	for u := b + 1; u < v; u++ {
		hu, known := r.hashes[u]
		if known && (!ok || hu != hb) {
			return true
		}
	}
	return false
}

// propApplied is a version a member applied, waiting for its report.
type propApplied struct {
	canon string
	view  [][]string
	first bool // the member's first version: its report may predate the membership
}

// propMember is one client in a room: its Tracker, the view it has asked
// for, what it applied and compared.
type propMember struct {
	name             string
	room             *propRoom
	c                *client.Client
	hold             atomic.Pointer[chan struct{}] // set: the read loop stops (a slow member)
	reports, heavies atomic.Int64                  // pushes read on propReport and propHeavy

	mu          sync.Mutex
	tr          statesync.Tracker
	view        [][]string  // nil: everything
	nextView    *[][]string // asked for; in effect from the next SNAPSHOT
	pending     map[uint64]propApplied
	applied     int
	compared    int
	snapshots   int
	catchUps    int // deltas over versions the member was not sent (a slow member's)
	behind      int // SNAPSHOTs after the first that no view change explains
	viewChanges int
	frames      int
	version     uint64
	spans       [][2]uint64 // DELTAs from base b to v > b+1, for changedWithin
	errs        []string
}

func (m *propMember) fail(format string, args ...any) {
	if len(m.errs) < 20 {
		m.errs = append(m.errs, fmt.Sprintf(format, args...))
	}
}

// gate holds the read loop while the member is made slow.
func (m *propMember) gate() {
	if ch := m.hold.Load(); ch != nil {
		select {
		case <-*ch:
		case <-time.After(9 * time.Second):
		}
	}
}

// onState takes a shield.room.state body.
func (m *propMember) onState(body []byte) {
	m.gate()
	f, ferr := statesync.Decode(body)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.frames++
	u, err := m.tr.Receive(body)
	if err != nil {
		m.fail("state frame: %v", err)
	}
	if u.Sync {
		m.fail("a %v update of version %d asks for a sync: %s", u.Status, u.Version, u.Why)
	}
	switch u.Status {
	case statesync.Partial:
		return
	case statesync.Applied:
	default:
		m.fail("a %v frame (version %d): %s", u.Status, u.Version, u.Why)
		return
	}
	first := m.applied == 0
	m.applied++
	if u.Kind == statesync.SnapshotFrame {
		m.snapshots++
		switch {
		case m.nextView != nil:
			m.view, m.nextView = *m.nextView, nil
			m.viewChanges++
		case !first:
			m.behind++
		}
	} else if ferr == nil && f.Version > f.Base+1 {
		m.spans = append(m.spans, [2]uint64{f.Base, f.Version})
	}
	if !first && u.Version <= m.version {
		m.fail("version %d applied after version %d", u.Version, m.version)
	}
	m.version = u.Version
	a := propApplied{canon: propCanon(propNorm(m.tr.State())), view: m.view, first: first}
	if rep := m.room.report(u.Version); rep != nil {
		m.check(u.Version, a, rep)
		return
	}
	m.pending[u.Version] = a
}

// compareLater compares what the member applied at v, if it did and had
// no report then.
func (m *propMember) compareLater(v uint64, rep *propReportOf) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.pending[v]; ok {
		delete(m.pending, v)
		m.check(v, a, rep)
	}
}

func (m *propMember) check(v uint64, a propApplied, rep *propReportOf) {
	want := rep.full
	if a.view != nil {
		want = propCanon(propFilter(rep.tree, a.view))
	}
	if a.canon != want {
		m.fail("version %d (view %v): the applied state\n  %s\nis not the room's\n  %s", v, a.view, a.canon, want)
		return
	}
	m.compared++
}

func (m *propMember) snapshot() (applied, compared int, version uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied, m.compared, m.version
}

// TestClientsTrackState is docs/rooms.md §15's property row: the deltas a
// Go client applies (client and statesync.Tracker) equal the server's
// state after every tick. propRooms rooms of the kind "prop" run at
// 60 Hz, each for propTicks ticks of random changes to room.state
// (testdata/rooms_property_room.lua, seeded: SHIELD_PROP_SEED replays a
// run), each tick's state pushed as shield.json.encode(room.state) on a
// report route. Each room has four members, each checking that its state
// at every version it applies is the reported state of that version (as
// its view shows it):
//
//   - full: idlen, sees everything;
//   - typed: typelen, sees everything;
//   - view: joins with a view (the join's meta, room:view in room_join),
//     and changes it three times (to other prefixes, to the root only, to
//     everything again), each a SNAPSHOT of the new view;
//   - slow: stops reading twice, until its session's queue is full (64
//     KiB): once for a moment, so that its next frame is a DELTA from an
//     older base, covering versions it was refused; once until the room
//     has moved more than room.history (8 ticks) on, so that it gets a
//     SNAPSHOT.
//
// No member may ever see a gap (a frame it cannot apply, a DELTA from
// another base): the base of each frame is what the gateway accepted.
func TestClientsTrackState(t *testing.T) {
	seed := time.Now().UnixNano() % 1_000_000_007
	if env := os.Getenv("SHIELD_PROP_SEED"); env != "" {
		n, err := strconv.ParseInt(env, 10, 64)
		if err != nil {
			t.Fatalf("SHIELD_PROP_SEED=%q: %v", env, err)
		}
		seed = n
	}
	t.Logf("seed %d (SHIELD_PROP_SEED=%d replays the rooms' changes)", seed, seed)
	started := time.Now()
	s := wiretest.Start(t, "shield.yaml", propConfig(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	rooms := make([]*propRoom, propRooms)
	var wg sync.WaitGroup
	for i := range rooms {
		r := &propRoom{t: t, seed: seed + int64(i)*7919, reports: map[uint64]*propReportOf{}, hashes: map[uint64]uint64{}}
		rooms[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			propRun(ctx, s, r, i)
		}()
	}
	wg.Wait()

	total, compared := 0, 0
	catchUps, behind := 0, 0
	for i, r := range rooms {
		r.mu.Lock()
		for _, e := range r.errs {
			t.Errorf("room %d (seed %d): %s", i, r.seed, e)
		}
		ticks := len(r.hashes)
		r.mu.Unlock()
		total += ticks
		for _, m := range r.members {
			m.mu.Lock()
			for _, e := range m.errs {
				t.Errorf("room %d (seed %d) %s: %s", i, r.seed, m.name, e)
			}
			for v, a := range m.pending {
				if !a.first {
					t.Errorf("room %d (seed %d) %s: version %d applied, but no member got its report", i, r.seed, m.name, v)
				}
			}
			if m.compared < m.applied-1 || m.compared == 0 {
				t.Errorf("room %d %s: %d of %d versions compared with the room's report", i, m.name, m.compared, m.applied)
			}
			for _, sp := range m.spans {
				if strings.HasSuffix(m.name, "slow") && r.changedWithin(sp[0], sp[1]) {
					m.catchUps++
				}
			}
			if strings.HasSuffix(m.name, "slow") {
				catchUps += m.catchUps
				behind += m.behind
			} else if m.behind > 0 {
				t.Errorf("room %d %s: %d SNAPSHOTs that neither the join nor a view change explains", i, m.name, m.behind)
			}
			if strings.HasSuffix(m.name, "view") && m.viewChanges != 3 {
				t.Errorf("room %d %s: %d view changes took effect, want 3", i, m.name, m.viewChanges)
			}
			compared += m.compared
			t.Logf("room %d %s: %d frames, %d versions applied (last %d), %d compared, %d snapshots (%d behind), %d catch-up deltas; %d reports, %d ballast pushes read; client %v",
				i, m.name, m.frames, m.applied, m.version, m.compared, m.snapshots, m.behind, m.catchUps, m.reports.Load(), m.heavies.Load(), m.c.Err())
			m.mu.Unlock()
		}
	}
	// Every tick from the first member's join on is reported (a tick or
	// two before it is not).
	if total < 2000 {
		t.Errorf("%d ticks reported in all, want at least 2,000", total)
	}
	if catchUps == 0 {
		t.Errorf("no slow member got a DELTA from an older base covering versions it was refused")
	}
	if behind == 0 {
		t.Errorf("no slow member got a SNAPSHOT for falling more than room.history behind")
	}
	t.Logf("%d ticks in %d rooms, %d versions compared, slow members: %d catch-up deltas, %d behind snapshots; %v",
		total, propRooms, compared, catchUps, behind, time.Since(started).Round(time.Millisecond))
}

// propRun is one room's run: its members join, the view member changes
// its view, the slow member stops reading twice, until propTicks ticks
// were reported; then every member catches up with the last reports.
func propRun(ctx context.Context, s *wiretest.Server, r *propRoom, i int) {
	dial := func(role, listener, env string) *propMember {
		m := &propMember{name: fmt.Sprintf("r%d-%s", i, role), room: r, pending: map[uint64]propApplied{}}
		c, err := client.Dial(ctx, s.Addr(listener), client.Options{Envelope: env, MaxFrameBytes: 1 << 20})
		if err != nil {
			r.fail("%s: dial: %v", m.name, err)
			return nil
		}
		m.c = c
		c.OnPush(propReport, func(b []byte) {
			m.gate()
			m.reports.Add(1)
			r.onReport(m.name, b)
		})
		c.OnPush(propState, m.onState)
		c.OnPush(propHeavy, func([]byte) {
			m.gate()
			m.heavies.Add(1)
		})
		if err := c.Call(ctx, propLogin, map[string]string{"user": m.name}, nil); err != nil {
			r.fail("%s: login: %v", m.name, err)
			c.Close()
			return nil
		}
		return m
	}
	full := dial("full", "game", "idlen")
	if full == nil {
		return
	}
	defer full.c.Close()
	var made struct{ Room string }
	if err := full.c.Call(ctx, propMake, map[string]any{"kind": "prop", "params": map[string]any{"seed": r.seed}}, &made); err != nil || made.Room == "" {
		r.fail("make: %+v %v", made, err)
		return
	}
	r.id = made.Room
	view1 := [][]string{{"pub"}, {"priv", "b"}, {"hand", "c", "x"}, {"list"}}
	views := []struct {
		at   int
		view [][]string
	}{
		{propTicks * 30 / 100, [][]string{{"a"}, {"deep"}, {"__proto__", "x"}, {"ключ", "a", "b"}}},
		{propTicks * 55 / 100, [][]string{}},
		{propTicks * 75 / 100, nil},
	}
	var members []*propMember
	for _, role := range []struct{ role, listener, env string }{{"full", "", ""}, {"typed", "typed", "typelen"}, {"view", "game", "idlen"}, {"slow", "game", "idlen"}} {
		m := full
		if role.listener != "" {
			if m = dial(role.role, role.listener, role.env); m == nil {
				return
			}
			defer m.c.Close()
		}
		join := map[string]any{"room": r.id}
		if role.role == "view" {
			m.view = view1
			join["meta"] = map[string]any{"view": view1}
		}
		r.mu.Lock()
		r.members = append(r.members, m)
		r.mu.Unlock()
		members = append(members, m)
		if err := m.c.Call(ctx, propJoin, join, nil); err != nil {
			r.fail("%s: join: %v", m.name, err)
			return
		}
	}
	view, slow := members[2], members[3]

	// The slow member, in a goroutine of its own: it stops reading at 15%
	// and at 45% of the run.
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		// The second stop lasts until the room has moved more than
		// room.history past the member's last accepted version, however
		// slowly a loaded machine ticks; a fixed time was not enough.
		for _, phase := range []struct {
			at    int
			extra time.Duration
			past  uint64
		}{{propTicks * 15 / 100, 100 * time.Millisecond, 0}, {propTicks * 45 / 100, 100 * time.Millisecond, propHistory + 5}} {
			for r.maxV.Load() < uint64(phase.at) {
				if ctx.Err() != nil {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			propStall(ctx, s, r, slow, phase.extra, phase.past)
		}
	}()

	for _, vc := range views {
		for r.maxV.Load() < uint64(vc.at) {
			if ctx.Err() != nil {
				r.fail("the run did not reach tick %d: %v", vc.at, ctx.Err())
				<-slowDone
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		next := vc.view
		view.mu.Lock()
		view.nextView = &next
		view.mu.Unlock()
		var ok struct{ OK bool }
		var body any = map[string]any{"view": nil}
		if next != nil {
			body = map[string]any{"view": next}
		}
		if err := view.c.Call(ctx, propSetView, body, &ok); err != nil || !ok.OK {
			r.fail("set_view %v: %+v %v", next, ok, err)
		}
	}
	for r.maxV.Load() < propTicks {
		if ctx.Err() != nil {
			r.fail("the run did not reach tick %d: %v", propTicks, ctx.Err())
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	<-slowDone

	// Every member catches up: what each applied was compared, and the
	// members that see everything reached the last reported version.
	last := r.maxV.Load()
	deadline := time.Now().Add(5 * time.Second)
	for {
		done := true
		for _, m := range members {
			m.mu.Lock()
			open := 0
			for _, a := range m.pending {
				if !a.first {
					open++
				}
			}
			if open > 0 || (m != view && m.version < last) {
				done = false
			}
			m.mu.Unlock()
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// propStall makes m stop reading and asks the room for ballast, until the
// room logs that a report to m was refused (its queue is full), then extra
// longer and, if past > 0, until the room's version is more than past
// beyond the tick the room filled m's queue to the byte; then it stops the ballast and reads again. It returns
// once m applied a version more than room.history past where it stopped.
func propStall(ctx context.Context, s *wiretest.Server, r *propRoom, m *propMember, extra time.Duration, past uint64) {
	_, _, before := m.snapshot()
	seen := s.Logs.Count("report refused", "arg.player_id", m.name)
	seenFilled := s.Logs.Count("queue filled", "arg.player_id", m.name)
	ch := make(chan struct{})
	m.hold.Store(&ch)
	stopped := time.Now()
	if err := m.c.Notify(propBallast, map[string]bool{"on": true}); err != nil {
		r.fail("%s: ballast on: %v", m.name, err)
	}
	for s.Logs.Count("report refused", "arg.player_id", m.name) == seen && time.Since(stopped) < 6*time.Second && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	full := s.Logs.Count("report refused", "arg.player_id", m.name) > seen
	filled := time.Since(stopped)
	time.Sleep(extra)
	if full && past > 0 {
		// The room logs "queue filled" at the tick it filled m's queue to
		// the byte. A state frame can still get in later when the
		// kernel takes a few more bytes from the socket, which is why
		// room.history is short here.
		es := s.Logs.Matching("queue filled", "arg.player_id", m.name)
		for deadline := time.Now().Add(5 * time.Second); len(es) <= seenFilled && time.Now().Before(deadline) && ctx.Err() == nil; {
			time.Sleep(2 * time.Millisecond)
			es = s.Logs.Matching("queue filled", "arg.player_id", m.name)
		}
		if len(es) <= seenFilled {
			r.fail("%s: the room never logged its queue filled", m.name)
		} else if at, err := strconv.ParseUint(es[len(es)-1].Attrs["tick"], 10, 64); err != nil {
			r.fail("%s: queue filled at tick %q: %v", m.name, es[len(es)-1].Attrs["tick"], err)
		} else {
			for deadline := time.Now().Add(10 * time.Second); r.maxV.Load() <= at+past && time.Now().Before(deadline) && ctx.Err() == nil; {
				time.Sleep(5 * time.Millisecond)
			}
			if v := r.maxV.Load(); v <= at+past {
				r.fail("%s: the room moved from version %d to %d in 10 s, want past %d", m.name, at, v, at+past)
			}
		}
	}
	held := time.Since(stopped) - filled
	if err := m.c.Notify(propBallast, map[string]bool{"on": false}); err != nil {
		r.fail("%s: ballast off: %v", m.name, err)
	}
	m.hold.Store(nil)
	close(ch)
	if !full {
		r.fail("%s stopped reading for %v, and its queue never filled", m.name, filled)
		return
	}
	r.t.Logf("%s: queue full %v after it stopped reading; read again %v later", m.name, filled.Round(time.Millisecond), held.Round(time.Millisecond))
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, _, v := m.snapshot(); v > before+uint64(propHistory) {
			return
		}
	}
	r.fail("%s applied nothing new within 5 s of reading again", m.name)
}
