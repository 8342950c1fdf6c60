package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// startExample serves the shipped example game (configs/actors.yaml) on
// free loopback ports, its admin server included, with the web listener's
// allowed_origins set to the admin server's origin, which the page is
// loaded from. It returns the admin address.
func startExample(t testing.TB) (*bootstrap.Server, string) {
	t.Helper()
	before := runtime.NumGoroutine()
	admin := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, "../configs/actors.yaml", bootstrap.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Override: func(c *config.Config) {
			for i := range c.Network.Listeners {
				l := &c.Network.Listeners[i]
				l.Address = "127.0.0.1:0"
				if l.Transport == "ws" {
					l.AllowedOrigins = []string{"http://" + admin}
				}
			}
			c.Network.Admin.Address = admin
			c.Storage.DataDir = t.TempDir() // not the repository's configs/data
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		wiretest.WaitGoroutines(t, before)
	})
	return srv, admin
}

// freePort returns a loopback address no one listened on a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestPlayPageServed: the admin server serves the page, its module and a
// config.json naming the ws listener; a page elsewhere is not served.
func TestPlayPageServed(t *testing.T) {
	srv, admin := startExample(t)
	get := func(path string) (int, string, string) {
		t.Helper()
		resp, err := http.Get("http://" + admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}
	if code, ctype, body := get("/play/"); code != 200 || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, `src="game.js"`) {
		t.Fatalf("/play/: %d %s %.200s", code, ctype, body)
	}
	if code, ctype, _ := get("/play/game.js"); code != 200 || !strings.Contains(ctype, "javascript") {
		t.Fatalf("/play/game.js: %d %s (a module needs a JavaScript type)", code, ctype)
	}
	code, _, body := get("/play/config.json")
	var cfg struct {
		URL, Listener, Envelope string
		Routes                  map[string]uint32
	}
	if err := json.Unmarshal([]byte(body), &cfg); code != 200 || err != nil {
		t.Fatalf("config.json: %d %v %s", code, err, body)
	}
	want := "ws://" + srv.Gateway.Addr("web").String() + "/ws"
	if cfg.URL != want || cfg.Listener != "web" || cfg.Envelope != "delimiter" || cfg.Routes["login"] != routeLogin || cfg.Routes["position"] != routePosition {
		t.Fatalf("config.json = %+v, want url %s", cfg, want)
	}
	if code, _, _ := get("/play/web.go"); code != 404 {
		t.Fatalf("/play/web.go: %d, want 404 (only the page and its module are served)", code)
	}
}

// openPair opens the example page for users a and b, each in a browser
// session of its own, in room with the page's auto mode, each expecting
// the other; it returns user -> page session.
func (b *chromium) openPair(ctx context.Context, admin, room, auto, ua, ub string) map[string]string {
	b.t.Helper()
	pages := map[string]string{}
	for _, pair := range [][2]string{{ua, ub}, {ub, ua}} {
		pages[pair[0]] = b.open(ctx, fmt.Sprintf("http://%s/play/?user=%s&room=%s&auto=%s&expect=%s", admin, pair[0], room, auto, pair[1]))
	}
	return pages
}

// TestPlayInChromium: two browser sessions (separate browser contexts) of
// the example page log in as alice and bob, join one room and press arrow
// keys (the page's auto mode); each must see the other move, from the
// room's position pushes over the WebSocket. Skipped without Chromium.
func TestPlayInChromium(t *testing.T) {
	srv, admin := startExample(t)
	b := startChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	room := fmt.Sprintf("chromium-%d", time.Now().UnixNano())
	pages := b.openPair(ctx, admin, room, "1", "alice", "bob")
	for user, page := range pages {
		got, err := b.await(ctx, page, awaitDone)
		if err != nil {
			t.Fatalf("%s's page: %v\nconsole:\n%s", user, err, b.console())
		}
		var r struct {
			User, Saw string
			At        struct{ X, Y int }
			Moves     int
		}
		if err := json.Unmarshal([]byte(got), &r); err != nil {
			t.Fatalf("%s's page result %q: %v", user, got, err)
		}
		other := map[string]string{"alice": "bob", "bob": "alice"}[user]
		if r.User != user || r.Saw != other || r.Moves < 2 {
			t.Fatalf("%s's page: %s", user, got)
		}
		t.Logf("%s saw %s at (%d,%d) after %d moves of its own", user, r.Saw, r.At.X, r.At.Y, r.Moves)
		if dir := os.Getenv("SHIELD_WEB_SCREENSHOTS"); dir != "" {
			if err := b.screenshot(ctx, page, filepath.Join(dir, user+".png")); err != nil {
				t.Errorf("screenshot: %v", err)
			}
		}
	}
	if n := srv.Gateway.Sessions().Len(); n != 2 {
		t.Errorf("%d sessions, want the 2 pages'", n)
	}
}

// awaitDone waits for the page's script to have started (a loaded machine
// may run it after the page is open) and then for its window.shieldDone.
const awaitDone = `new Promise((resolve, reject) => {
	const t0 = Date.now();
	(function wait() {
		if (window.shieldDone) window.shieldDone.then(r => resolve(JSON.stringify(r)), e => reject(new Error(String(e))));
		else if (Date.now() - t0 > 20000) reject(new Error("the page did not start"));
		else setTimeout(wait, 50);
	})();
})`

// TestPlayerLeavesTheBoard: when one of two players closes the page, the
// other's board drops them and its member count goes down (the room's
// left push, route 2102).
func TestPlayerLeavesTheBoard(t *testing.T) {
	_, admin := startExample(t)
	b := startChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	room := fmt.Sprintf("leave-%d", time.Now().UnixNano())
	pages := b.openPair(ctx, admin, room, "1", "carol", "dan")
	for user, page := range pages {
		if _, err := b.await(ctx, page, awaitDone); err != nil {
			t.Fatalf("%s's page: %v\nconsole:\n%s", user, err, b.console())
		}
	}
	// dan closes the tab.
	var info struct {
		TargetInfo struct {
			TargetID string `json:"targetId"`
		} `json:"targetInfo"`
	}
	b.must(ctx, pages["dan"], "Target.getTargetInfo", nil, &info)
	b.must(ctx, "", "Target.closeTarget", map[string]any{"targetId": info.TargetInfo.TargetID}, nil)
	got, err := b.await(ctx, pages["carol"], `new Promise((resolve, reject) => {
		const t0 = Date.now();
		(function wait() {
			const status = document.getElementById("status").textContent, log = document.getElementById("log").textContent;
			if (log.includes("dan left") && status.includes("with 0 other player(s)")) resolve(status);
			else if (Date.now() - t0 > 10000) reject(new Error("status " + JSON.stringify(status) + ", log " + JSON.stringify(log.slice(0, 300))));
			else setTimeout(wait, 50);
		})();
	})`)
	if err != nil {
		t.Fatalf("carol's page after dan left: %v\nconsole:\n%s", err, b.console())
	}
	t.Logf("carol's page: %s", got)
}

// The arena's routes in the example game (configs/actors.yaml).
const (
	routePlay       = 2004
	routeCancelPlay = 2005
	routeArenaMove  = 2201
	routeMatched    = 65524 // shield.match
)

// arenaPlayer is a client of the example game with its Room and its
// shield.match pushes.
type arenaPlayer struct {
	name    string
	c       *client.Client
	r       *client.Room
	matched chan matchEvent
}

// at is where who stands in p's applied room state.
func (p *arenaPlayer) at(who string) (x, y int64, ok bool) {
	p.r.State(func(st map[string]any, _ uint64, in bool) {
		players, _ := st["players"].(map[string]any)
		me, _ := players[who].(map[string]any)
		x, _ = me["x"].(int64)
		y, _ = me["y"].(int64)
		ok = in && me != nil
	})
	return x, y, ok
}

// TestArena plays the example game's arena (configs/services/arena.lua,
// docs/rooms.md §16 step 8) with two real Go clients on the game listener
// (idlen; the Go SDK's Room does not read the base64 state payloads of the
// delimiter envelope, which TestArenaInChromium's pages play on): both send
// play, are matched by the arena queue into one room, join with their
// tokens, steer with arena_move inputs, and each sees the other's position
// change in its own applied state. An untrusted input is clamped to the
// field; a tokenless join is refused; play is cancelled by cancel_play and
// by a disconnect; a leave removes the player from the others' state,
// brings it home (its lobby pushes reach it again), and the last leave
// closes the room.
func TestArena(t *testing.T) {
	srv, _ := startExample(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(name string) *arenaPlayer {
		t.Helper()
		c, err := client.Dial(ctx, srv.Gateway.Addr("game").String(), client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		p := &arenaPlayer{name: name, c: c, r: c.Room(), matched: make(chan matchEvent, 4)}
		c.OnPush(routeMatched, func(body []byte) {
			var e matchEvent
			if err := json.Unmarshal(body, &e); err != nil {
				t.Errorf("%s's shield.match push %s: %v", name, body, err)
			}
			select {
			case p.matched <- e:
			default: // never block the client's read loop
				t.Errorf("%s: more shield.match pushes than tickets: %s", name, body)
			}
		})
		login(t, c, name)
		return p
	}
	alice, bob := dial("alice"), dial("bob")
	for _, p := range []*arenaPlayer{alice, bob} {
		call(t, p.c, routeJoinRoom, map[string]string{"room": "lobby"}, nil)
	}

	var events []matchEvent
	for _, p := range []*arenaPlayer{alice, bob} {
		var out struct{ Ticket string }
		call(t, p.c, routePlay, nil, &out)
		if !strings.HasPrefix(out.Ticket, "arena/") {
			t.Fatalf("%s's play: ticket %q, want arena/<16 hex>", p.name, out.Ticket)
		}
	}
	for _, p := range []*arenaPlayer{alice, bob} {
		select {
		case e := <-p.matched:
			if e.Event != "matched" || !strings.HasPrefix(e.Room, "arena/") || e.Token == "" || len(e.Players) != 2 {
				t.Fatalf("%s's push %+v, want matched into an arena room with 2 players", p.name, e)
			}
			events = append(events, e)
		case <-ctx.Done():
			t.Fatalf("%s was not matched (fill_wait is 3s)", p.name)
		}
	}
	room := events[0].Room
	if events[1].Room != room {
		t.Fatalf("alice is in %s, bob in %s", room, events[1].Room)
	}
	for i, p := range []*arenaPlayer{alice, bob} {
		if err := p.r.JoinToken(ctx, room, events[i].Token, nil); err != nil {
			t.Fatalf("%s's join with its token: %v", p.name, err)
		}
	}

	// Each sees both at their spawn points, then the other move: alice
	// left, bob up (both have hundreds of units to go).
	var ax0, by0 int64
	wiretest.Eventually(t, "both players in both states", func() bool {
		var ok [4]bool
		ax0, _, ok[0] = bob.at("alice")
		_, by0, ok[1] = alice.at("bob")
		_, _, ok[2] = alice.at("alice")
		_, _, ok[3] = bob.at("bob")
		return ok == [4]bool{true, true, true, true}
	})
	if err := alice.c.Notify(routeArenaMove, map[string]any{"dx": -1, "dy": 0}); err != nil {
		t.Fatal(err)
	}
	if err := bob.c.Notify(routeArenaMove, map[string]any{"dx": 0, "dy": -1}); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "bob sees alice move left", func() bool { x, _, _ := bob.at("alice"); return x < ax0 })
	wiretest.Eventually(t, "alice sees bob move up", func() bool { _, y, _ := alice.at("bob"); return y < by0 })

	// A body that is not {dx, dy} stops alice: bob, still walking up,
	// is the clock (one tick is 10 units of his, read in the same state
	// as her x).
	both := func() (ax, by int64) {
		ax, _, _ = alice.at("alice")
		_, by, _ = alice.at("bob")
		return ax, by
	}
	if err := alice.c.Notify(routeArenaMove, "garbage"); err != nil {
		t.Fatal(err)
	}
	_, sent := both()
	var x1, y1 int64
	wiretest.Eventually(t, "3 ticks after the garbage", func() bool { x1, y1 = both(); return y1 <= sent-30 })
	if x1 <= 0 {
		t.Fatal("alice reached the left edge before her garbage input: it proves nothing")
	}
	wiretest.Eventually(t, "5 more ticks", func() bool {
		x2, y2 := both()
		if x2 != x1 {
			t.Fatalf("alice moved from x %d to %d after her garbage input", x1, x2)
		}
		return y2 <= y1-50
	})

	// Untrusted input: a huge dx is a direction like 1, a string dy is 0;
	// alice runs into the field's edge (560) and no further, her y kept;
	// bob into the top edge (0).
	_, ay, _ := bob.at("alice")
	if err := alice.c.Notify(routeArenaMove, map[string]any{"dx": 1e12, "dy": "north"}); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "alice at the field's right edge", func() bool { x, y, _ := bob.at("alice"); return x == 560 && y == ay })
	wiretest.Eventually(t, "bob at the top edge", func() bool { _, y, _ := alice.at("bob"); return y == 0 })
	if x, y, _ := bob.at("alice"); x != 560 || y != ay {
		t.Fatalf("alice at (%d,%d), want (560,%d)", x, y, ay)
	}

	// Only matched players come in; carol's play is cancelled by
	// cancel_play, dave's by his disconnect.
	carol := dial("carol")
	if err := carol.r.Join(ctx, room, nil); !codeIs(err, "arena.seat_required") {
		t.Fatalf("carol's tokenless join: %v, want arena.seat_required", err)
	}
	var cancelled struct{ Cancelled bool }
	call(t, carol.c, routePlay, nil, nil)
	if call(t, carol.c, routeCancelPlay, nil, &cancelled); !cancelled.Cancelled {
		t.Fatal("carol's waiting ticket was not cancelled")
	}
	if call(t, carol.c, routeCancelPlay, nil, &cancelled); cancelled.Cancelled {
		t.Fatal("a second cancel_play cancelled something")
	}
	dave := dial("dave")
	call(t, dave.c, routePlay, nil, nil)
	dave.c.Close()
	metric := func(name string, labels map[string]string) float64 {
		return gathered(t, &roomsRig{s: &wiretest.Server{Srv: srv}}, name, labels)
	}
	wiretest.Eventually(t, "dave's ticket cancelled at his disconnect", func() bool {
		return metric("shield_match_tickets_total", map[string]string{"queue": "arena", "outcome": "cancelled"}) == 2
	})

	// bob leaves: gone from alice's state, home again, where his lobby
	// moves reach him (the player service gave the lobby his new ref).
	if err := bob.r.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if reason, _, _ := bob.r.End(); reason != "left" {
		t.Fatalf("bob's END reason %q, want left", reason)
	}
	wiretest.Eventually(t, "bob gone from alice's state", func() bool {
		_, _, ok := alice.at("bob")
		_, _, in := alice.at("alice")
		return !ok && in
	})
	var seen pushes
	bob.c.OnPush(routePosition, seen.add)
	call(t, bob.c, routeMove, map[string]int{"x": 3, "y": 4}, nil)
	wiretest.Eventually(t, "bob's lobby move pushed to him", func() bool { return seen.has(`{"player_id":"bob","x":3,"y":4}`) })

	// The last one out closes the room.
	if err := alice.r.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "the empty arena closed", func() bool {
		return metric("shield_rooms_closed_total", map[string]string{"kind": "arena", "reason": "requested"}) == 1
	})
}

// TestArenaInChromium: two browser sessions of the example page log in as
// ann and ben, and each presses "Play arena" with the mouse; the queue
// matches them, each page joins the arena room with its token
// (client.room().join), holds arrow keys (the page's auto=arena mode) and
// must see the other move in the room's state. Then ann presses "Leave
// arena": her page shows END's reason, and ben's state drops her. Skipped
// without Chromium.
func TestArenaInChromium(t *testing.T) {
	_, admin := startExample(t)
	b := startChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lobby := fmt.Sprintf("arena-%d", time.Now().UnixNano())
	pages := b.openPair(ctx, admin, lobby, "arena", "ann", "ben")
	// shown is what a failure reports: each page's status line and log,
	// and the browser's console.
	shown := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var out strings.Builder
		for user, page := range pages {
			text, err := b.await(ctx, page, `document.getElementById("status").textContent + "\n" + document.getElementById("log").textContent`)
			fmt.Fprintf(&out, "%s's page (%v):\n%s\n", user, err, text)
		}
		return out.String() + "console:\n" + b.console()
	}
	for user, page := range pages {
		if err := b.click(ctx, page, "arena"); err != nil {
			t.Fatalf("%s's Play arena: %v\n%s", user, err, shown())
		}
	}
	arenas := map[string]bool{}
	for user, page := range pages {
		got, err := b.await(ctx, page, awaitDone)
		if err != nil {
			t.Fatalf("%s's page: %v\n%s", user, err, shown())
		}
		var r struct {
			User, Saw, Arena string
			At               struct{ X, Y int }
			Moves            int
		}
		if err := json.Unmarshal([]byte(got), &r); err != nil {
			t.Fatalf("%s's page result %q: %v", user, got, err)
		}
		other := map[string]string{"ann": "ben", "ben": "ann"}[user]
		if r.User != user || r.Saw != other || r.Moves < 1 || !strings.HasPrefix(r.Arena, "arena/") {
			t.Fatalf("%s's page: %s", user, got)
		}
		arenas[r.Arena] = true
		t.Logf("%s saw %s at (%d,%d) in %s after %d inputs of its own", user, r.Saw, r.At.X, r.At.Y, r.Arena, r.Moves)
		if dir := os.Getenv("SHIELD_WEB_SCREENSHOTS"); dir != "" {
			if err := b.screenshot(ctx, page, filepath.Join(dir, user+"-arena.png")); err != nil {
				t.Errorf("screenshot: %v", err)
			}
		}
	}
	if len(arenas) != 1 {
		t.Fatalf("the pages are in %d arenas, want one", len(arenas))
	}

	if err := b.click(ctx, pages["ann"], "arena-leave"); err != nil {
		t.Fatalf("ann's Leave arena: %v\n%s", err, shown())
	}
	for user, check := range map[string]string{
		"ann": `document.getElementById("status").textContent.includes("out of the arena (left)")`,
		"ben": `(() => { const st = window.shieldClient.room().state; return !!st && !!st.players.ben && !st.players.ann; })()`,
	} {
		got, err := b.await(ctx, pages[user], `new Promise((resolve, reject) => {
			const t0 = Date.now();
			(function wait() {
				if (`+check+`) resolve("ok");
				else if (Date.now() - t0 > 10000) reject(new Error("status " + JSON.stringify(document.getElementById("status").textContent)));
				else setTimeout(wait, 50);
			})();
		})`)
		if err != nil || got != "ok" {
			t.Fatalf("%s's page after ann left: %v\n%s", user, err, shown())
		}
	}
}
