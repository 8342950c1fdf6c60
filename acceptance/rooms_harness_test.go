package acceptance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/statesync"
)

// The harness of every rooms_*_test.go: a real gateway of one lobby
// (testdata/rooms_lobby.lua) and the room kinds of the test, and members
// that track their room's state with a statesync.Tracker.

// The lobby's routes, and the reserved room routes of docs/rooms.md §8.1.
const (
	roomsLogin = 1
	roomsMake  = 2
	roomsAsk   = 3
	roomsEnter = 4
	roomsHold  = 5
	roomsPing  = 6
	roomsPlay  = 7
	roomsQuit  = 8

	roomsState = 65520
	roomsJoin  = 65522
	roomsLeave = 65523
	roomsMatch = 65524
)

// roomsConf is a gateway of the lobby and room kinds.
type roomsConf struct {
	node     string
	listener string        // more keys of the game listener, "" for none
	session  string        // the session block's keys, "" for none
	kinds    string        // the room kinds: items of actors: (see roomKind)
	match    string        // the match block's keys, "" for none
	timeout  time.Duration // bounds every call of the test
	strict   bool          // a state frame that breaks the format fails the test
}

func (c roomsConf) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "node: {name: %s}\nnetwork:\n  listeners:\n    - {name: game, address: \"127.0.0.1:0\", entry_service: lobby", c.node)
	if c.listener != "" {
		b.WriteString(", " + c.listener)
	}
	b.WriteString("}\nlog: {format: json, level: info}\n")
	if c.session != "" {
		fmt.Fprintf(&b, "session: {%s}\n", c.session)
	}
	b.WriteString("actors:\n" + roomKind("lobby", "rooms_lobby.lua", "",
		"{id: 1, name: login, binding: login, requires_auth: false}", "{id: 2, name: make, binding: make}",
		"{id: 3, name: ask, binding: ask}", "{id: 4, name: enter, binding: enter}",
		"{id: 5, name: hold, binding: hold}", "{id: 6, name: ping, binding: ping}",
		"{id: 7, name: play, binding: play}", "{id: 8, name: quit_play, binding: quit_play}"))
	b.WriteString(c.kinds)
	if c.match != "" {
		fmt.Fprintf(&b, "match: {%s}\n", c.match)
	}
	return b.String()
}

// roomKind is an item of actors: running script (in testdata) with the
// room block's keys room ("": an actor with no room block) and routes, each
// a YAML flow mapping.
func roomKind(name, script, room string, routes ...string) string {
	s := fmt.Sprintf("  - name: %s\n    script: %s\n", name, roomScript(script))
	if room != "" {
		s += "    room: {" + room + "}\n"
	}
	if len(routes) > 0 {
		s += "    rpc:\n      routes:\n"
	}
	for _, r := range routes {
		s += "        - " + r + "\n"
	}
	return s
}

// roomScript is the absolute path of a script in testdata.
func roomScript(name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return p
}

// roomsRig is a started gateway, a context bounding the test, the room
// its test made (startRoomsRig), and an observer: a logged-in client in
// no room, who makes rooms and asks them through the lobby.
type roomsRig struct {
	t      *testing.T
	s      *wiretest.Server
	ctx    context.Context
	room   string
	obs    *roomMember
	strict bool
}

func startRooms(t *testing.T, c roomsConf) *roomsRig {
	t.Helper()
	s := wiretest.Start(t, "shield.yaml", c.yaml(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	t.Cleanup(cancel)
	return &roomsRig{t: t, s: s, ctx: ctx, strict: c.strict}
}

// startRoomsRig is a gateway with an "arena" kind of
// testdata/rooms_resume.lua (room routes move, an input, and out, which
// removes its caller) whose session and room blocks have the keys session
// and room, and an arena room made with name.
func startRoomsRig(t *testing.T, session, room, name string) *roomsRig {
	t.Helper()
	g := startRooms(t, roomsConf{node: "gw-rooms", session: session, timeout: 30 * time.Second, strict: true,
		kinds: roomKind("arena", "rooms_resume.lua", room,
			"{id: 3001, name: move, room_input: true}", "{id: 3002, name: out, binding: out}")})
	maker, _ := g.dial()
	g.login(maker, "maker")
	var made struct{ Room string }
	if err := maker.Call(g.ctx, roomsMake, map[string]string{"name": name}, &made); err != nil {
		t.Fatal(err)
	}
	g.room = made.Room
	return g
}

// on is the rig for a subtest: its helpers fail t.
func (g *roomsRig) on(t *testing.T) *roomsRig {
	h := *g
	h.t = t
	return &h
}

// roomMember is a logged-in client: its room's state frames go through a
// Tracker (updates and the errors of frames that broke the format kept),
// and the pushes on the routes given at login are kept in order.
type roomMember struct {
	name   string
	c      *client.Client
	mu     sync.Mutex
	tr     statesync.Tracker
	up     []statesync.Update
	errs   []error
	pushes map[uint32][][]byte
}

// track sends c's state frames to m, and its pushes on routes; strict, a
// frame that breaks the format is also an error of the test.
func (g *roomsRig) track(m *roomMember, c *client.Client, strict bool, routes ...uint32) {
	m.c, m.pushes = c, map[uint32][][]byte{}
	t := g.t
	c.OnPush(roomsState, func(body []byte) {
		m.mu.Lock()
		defer m.mu.Unlock()
		u, err := m.tr.Receive(body)
		if err != nil {
			m.errs = append(m.errs, err)
			if strict {
				t.Errorf("%s: state frame: %v", m.name, err)
			}
		}
		m.up = append(m.up, u)
	})
	for _, r := range routes {
		c.OnPush(r, func(body []byte) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.pushes[r] = append(m.pushes[r], append([]byte(nil), body...))
		})
	}
}

// dialPlain dials the game listener directly; the client is closed at
// cleanup.
func (g *roomsRig) dialPlain(opts client.Options) *client.Client {
	g.t.Helper()
	c, err := client.Dial(g.ctx, g.s.Addr("game"), opts)
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { c.Close() })
	return c
}

// player dials the game listener and logs user in, keeping the pushes on
// routes.
func (g *roomsRig) player(user string, routes ...uint32) *roomMember {
	g.t.Helper()
	m := &roomMember{name: user}
	c := g.dialPlain(client.Options{})
	g.track(m, c, g.strict, routes...)
	g.login(c, user)
	return m
}

// dial connects a client through its own FlakyNet, so that the test can
// cut its connection; it reconnects and resumes as an SDK does.
func (g *roomsRig) dial() (*client.Client, *wiretest.FlakyNet) {
	g.t.Helper()
	net := wiretest.NewFlakyNet(g.t, g.s.Addr("game"))
	c, err := client.Dial(g.ctx, net.Addr(), client.Options{
		Reconnect: &client.Reconnect{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: -1}})
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { c.Close() })
	return c, net
}

// dialMember is dial with m's state frames going to its Tracker. A Gap
// is not an error, a frame that breaks the format is.
func (g *roomsRig) dialMember(m *resumable) *client.Client {
	c, net := g.dial()
	if m.roomMember == nil {
		m.roomMember = &roomMember{}
	}
	m.name, m.net = m.user, net
	m.resumed = make(chan client.ReconnectInfo, 4)
	c.OnReconnect(func(i client.ReconnectInfo) { m.resumed <- i })
	g.track(m.roomMember, c, true)
	return c
}

func (g *roomsRig) login(c *client.Client, user string) {
	g.t.Helper()
	if err := c.Call(g.ctx, roomsLogin, map[string]string{"user": user}, nil); err != nil {
		g.t.Fatalf("login %s: %v", user, err)
	}
}

// resumable is a roomMember whose connection the test cuts.
type resumable struct {
	*roomMember
	user    string
	net     *wiretest.FlakyNet
	resumed chan client.ReconnectInfo
}

// member logs user in and joins the rig's room; it returns once the
// member's SNAPSHOT applied.
func (g *roomsRig) member(user string) *resumable {
	g.t.Helper()
	m := &resumable{roomMember: &roomMember{}, user: user}
	g.login(g.dialMember(m), user)
	g.join(m.roomMember, g.room)
	return m
}

// drop cuts m's connection and keeps it down: the session is suspended,
// not closed (resume_window > 0).
func (g *roomsRig) drop(m *resumable) {
	g.t.Helper()
	m.net.Refusing.Store(true)
	m.net.Cut()
	g.s.Logs.WaitFor(g.t, "room_suspended", "player_id", m.user, "suspended", "true")
}

// resume lets m's client back; it resumes its session.
func (g *roomsRig) resume(m *resumable) {
	g.t.Helper()
	m.net.Refusing.Store(false)
	select {
	case i := <-m.resumed:
		if !i.Resumed {
			g.t.Fatalf("%s's reconnect did not resume: %s", m.user, i.Message)
		}
	case <-g.ctx.Done():
		g.t.Fatalf("%s never reconnected", m.user)
	}
}

// observer is the rig's client in no room, logged in at its first use.
func (g *roomsRig) observer() *roomMember {
	if g.obs == nil {
		g.obs = g.player("observer")
	}
	return g.obs
}

// make creates a room of kind with params (nil: none) from the
// observer's lobby and returns its id.
func (g *roomsRig) make(kind string, params any) string {
	g.t.Helper()
	return g.makeOn(g.observer().c, kind, params)
}

// makeOn is make from c's lobby.
func (g *roomsRig) makeOn(c *client.Client, kind string, params any) string {
	g.t.Helper()
	req := map[string]any{"kind": kind}
	if params != nil {
		req["params"] = params
	}
	var made struct{ Room string }
	if err := c.Call(g.ctx, roomsMake, req, &made); err != nil || made.Room == "" {
		g.t.Fatalf("make %s %v: %+v %v", kind, params, made, err)
	}
	return made.Room
}

// ask calls the room's method with arg through the observer's lobby,
// decoding its first result into out.
func (g *roomsRig) ask(room, method string, arg, out any) {
	g.t.Helper()
	req := map[string]any{"room": room, "method": method}
	if arg != nil {
		req["arg"] = arg
	}
	if err := g.observer().c.Call(g.ctx, roomsAsk, req, out); err != nil {
		g.t.Fatalf("ask %s of %s: %v", method, room, err)
	}
}

// tryJoin sends shield.room.join for room with meta (nil: none).
func (g *roomsRig) tryJoin(m *roomMember, room string, meta any) error {
	body := map[string]any{"room": room}
	if meta != nil {
		body["meta"] = meta
	}
	var joined struct{ Room string }
	err := m.c.Call(g.ctx, roomsJoin, body, &joined)
	if err == nil && joined.Room != room {
		return fmt.Errorf("the join answered room %q, want %q", joined.Room, room)
	}
	return err
}

// join joins the room through the shield.room.join route and waits for the
// SNAPSHOT: only then may a client send inputs (§8.3 step 4).
func (g *roomsRig) join(m *roomMember, room string) {
	g.t.Helper()
	if err := g.tryJoin(m, room, nil); err != nil {
		g.t.Fatalf("%s's join of %s: %v", m.name, room, err)
	}
	m.waitSnapshot(g.t, room)
}

// leave sends shield.room.leave and waits for m's END: only then is the
// session home again (docs/rooms.md §8.3; a frame sent between the leave's
// answer and END may be read at the room's epoch, §5.1).
func (g *roomsRig) leave(m *roomMember) {
	g.t.Helper()
	n := len(m.since(0))
	if err := m.c.Call(g.ctx, roomsLeave, nil, nil); err != nil {
		g.t.Fatalf("%s's leave: %v", m.name, err)
	}
	dl, _ := g.ctx.Deadline()
	waitFor(g.t, time.Until(dl), m.name+"'s END after the leave", func() bool { _, ok := m.endSince(n); return ok })
	if u, _ := m.endSince(n); u.Reason != "left" {
		g.t.Fatalf("%s's END after a leave: reason %q, want left", m.name, u.Reason)
	}
}

// expectHome checks that m's session is bound to the lobby: a lobby route
// answers.
func (g *roomsRig) expectHome(m *roomMember, after string) {
	g.t.Helper()
	var home struct{ Home bool }
	if err := m.c.Call(g.ctx, roomsPing, nil, &home); err != nil || !home.Home {
		g.t.Fatalf("after %s the session is not home: %+v %v", after, home, err)
	}
}

// waitSnapshot waits until the member holds a state of room.
func (m *roomMember) waitSnapshot(t *testing.T, room string) {
	t.Helper()
	wiretest.Eventually(t, m.name+"'s SNAPSHOT of "+room, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, ok := m.tr.Version()
		return ok && m.tr.RoomID() == room
	})
}

// state is a copy of the member's state and its updates.
func (m *roomMember) state() (map[string]any, []statesync.Update) {
	st, _, _, ups, _ := m.view()
	return st, ups
}

// view is a copy of the member's state, its version (ok false without a
// state), its updates and the frames that failed to apply.
func (m *roomMember) view() (st map[string]any, v uint64, ok bool, ups []statesync.Update, errs []error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok = m.tr.Version()
	return statesync.Clone(m.tr.State()), v, ok, append([]statesync.Update(nil), m.up...), append([]error(nil), m.errs...)
}

func (m *roomMember) version() (uint64, bool) {
	_, v, ok, _, _ := m.view()
	return v, ok
}

// since is the updates received after the first n.
func (m *roomMember) since(n int) []statesync.Update {
	_, ups := m.state()
	return ups[min(n, len(ups)):]
}

// pushed is the bodies pushed to the member on route so far.
func (m *roomMember) pushed(route uint32) [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.pushes[route]...)
}

// end is the member's first END update, if one came.
func (m *roomMember) end() (statesync.Update, bool) { return m.endSince(0) }

// endSince is the first END update after the first n updates.
func (m *roomMember) endSince(n int) (statesync.Update, bool) {
	for _, u := range m.since(n) {
		if u.Kind == statesync.EndFrame {
			return u, true
		}
	}
	return statesync.Update{}, false
}
