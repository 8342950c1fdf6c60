package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/client/examples/game"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// patience bounds every wait of these tests.
const patience = 5 * time.Second

// startGame serves the example game (configs/actors.yaml) in-process on a
// free port, with session.resume_window set to window (0: resume off). It
// is stopped, and goroutines are checked, at cleanup.
func startGame(t *testing.T, window time.Duration) *bootstrap.Server {
	t.Helper()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, "../configs/actors.yaml", bootstrap.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Override: func(c *config.Config) {
			for i := range c.Network.Listeners {
				c.Network.Listeners[i].Address = "127.0.0.1:0"
			}
			c.Network.Admin = nil
			c.Storage = nil // no store files in configs/data: profiles live in memory
			c.Session.ResumeWindow = window
			c.Session.ShutdownGrace = time.Second
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
	return srv
}

// pushes collects the position pushes a client gets, in order.
type pushes struct {
	mu  sync.Mutex
	got []game.PositionPush
	ch  chan game.PositionPush
}

func collect(c *client.Client) *pushes {
	p := &pushes{ch: make(chan game.PositionPush, 64)}
	game.OnPosition(c, func(b game.PositionPush, err error) {
		if err != nil {
			return
		}
		p.mu.Lock()
		p.got = append(p.got, b)
		p.mu.Unlock()
		p.ch <- b
	})
	return p
}

func (p *pushes) all() []game.PositionPush {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]game.PositionPush(nil), p.got...)
}

// next waits for the next push.
func (p *pushes) next(t testing.TB) game.PositionPush {
	t.Helper()
	select {
	case b := <-p.ch:
		return b
	case <-time.After(patience):
		t.Fatal("no position push")
		return game.PositionPush{}
	}
}

func dial(t testing.TB, addr string, o client.Options) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := client.Dial(ctx, addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// enter logs in as user and joins room, through the generated stubs.
func enter(t testing.TB, c *client.Client, user, room string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	login, err := game.Login(ctx, c, game.LoginRequest{User: new(user)})
	if err != nil || login.PlayerID != user {
		t.Fatalf("login %s: %+v %v", user, login, err)
	}
	if _, err := game.JoinRoom(ctx, c, game.JoinRoomRequest{Room: room}); err != nil {
		t.Fatalf("join_room %s: %v", room, err)
	}
}

func move(t testing.TB, c *client.Client, x, y float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := game.Move(ctx, c, game.MoveRequest{X: x, Y: y}); err != nil {
		t.Fatalf("move: %v", err)
	}
}

// reconnects hands OnReconnect's infos to the test.
func reconnects(c *client.Client) <-chan client.ReconnectInfo {
	ch := make(chan client.ReconnectInfo, 4)
	c.OnReconnect(func(i client.ReconnectInfo) { ch <- i })
	return ch
}

func waitReconnect(t testing.TB, ch <-chan client.ReconnectInfo) client.ReconnectInfo {
	t.Helper()
	select {
	case i := <-ch:
		return i
	case <-time.After(patience):
		t.Fatal("no reconnect")
		return client.ReconnectInfo{}
	}
}

// suspended waits until the gateway holds player's session suspended.
func suspended(t testing.TB, srv *bootstrap.Server, player string) {
	t.Helper()
	wiretest.Eventually(t, player+"'s session suspended", func() bool {
		s := srv.Gateway.Sessions().Player(player)
		return s != nil && s.Suspended()
	})
}

var fastReconnect = &client.Reconnect{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: -1}

// TestResumeDeliversQueuedPushes: the connection drops under a logged-in
// player with a call in flight. The call fails at once and is never sent
// again; while the network is down, another player moves three times;
// when it is back, the client resumes the session and the three queued
// pushes arrive in order, then the session goes on as before.
func TestResumeDeliversQueuedPushes(t *testing.T) {
	srv := startGame(t, 30*time.Second)
	gw := srv.Gateway.Addr("game").String()
	net := wiretest.NewFlakyNet(t, gw)
	c := dial(t, net.Addr(), client.Options{HeartbeatEvery: -1, Reconnect: fastReconnect, Routes: game.Routes})
	other := dial(t, gw, client.Options{HeartbeatEvery: -1})
	enter(t, c, "alice", "plaza")
	token := c.ResumeToken()
	if token == "" {
		t.Fatal("no resume token after login")
	}
	enter(t, other, "bob", "plaza")
	mine, theirs := collect(c), collect(other)
	back := reconnects(c)
	drops := make(chan client.DisconnectInfo, 4)
	c.OnDisconnect(func(d client.DisconnectInfo) { drops <- d })

	// A move that the network swallows: the gateway never sees it.
	net.DropUp.Store(true)
	inFlight := make(chan error, 1)
	go func() {
		inFlight <- c.CallName(context.Background(), "move", game.MoveRequest{X: 5, Y: 5}, nil)
	}()
	wiretest.Eventually(t, "the move sent into the void", func() bool { return net.Dropped.Load() > 0 })
	net.Refusing.Store(true)
	net.Cut()
	select {
	case err := <-inFlight:
		var de *client.DisconnectedError
		if !errors.As(err, &de) || !errors.Is(err, client.ErrClosed) {
			t.Fatalf("the call in flight returned %v, want a *DisconnectedError", err)
		}
	case <-time.After(patience):
		t.Fatal("the call in flight did not return after the drop")
	}
	if d := <-drops; !d.Reconnecting {
		t.Fatalf("OnDisconnect %+v, want Reconnecting", d)
	}
	if err := c.Call(context.Background(), game.RouteMove, game.MoveRequest{}, nil); !errors.Is(err, client.ErrNotConnected) {
		t.Fatalf("a call while reconnecting: %v, want ErrNotConnected", err)
	}

	suspended(t, srv, "alice")
	for i := 1; i <= 3; i++ {
		move(t, other, float64(i), float64(i))
		theirs.next(t) // the room pushed it to both: alice's copy is queued
	}
	net.DropUp.Store(false)
	net.Refusing.Store(false)
	if info := waitReconnect(t, back); !info.Resumed || info.Attempt < 1 {
		t.Fatalf("OnReconnect %+v, want Resumed", info)
	}
	for i := 1; i <= 3; i++ {
		if p := mine.next(t); p.PlayerID != "bob" || p.X != float64(i) || p.Y != float64(i) {
			t.Fatalf("queued push %d = %+v; all: %+v", i, p, mine.all())
		}
	}
	if tok := c.ResumeToken(); tok == "" || tok == token {
		t.Fatalf("resume token after the resume %q (before %q), want a new one", tok, token)
	}
	move(t, c, 9, 9) // still logged in, still in the room
	if p := mine.next(t); p.PlayerID != "alice" || p.X != 9 {
		t.Fatalf("after the resume: %+v", p)
	}
	// The swallowed move was never sent again: bob saw only alice's 9,9.
	if p := theirs.next(t); p.PlayerID != "alice" || p.X != 9 {
		t.Fatalf("bob saw %+v, want alice at 9,9 (the lost move must not be re-sent)", p)
	}
}

// TestFailedResumeSaysLogInAgain: while the player's session is
// suspended, a login elsewhere ends it (kick_old). The client's resume
// fails: OnReconnect says Resumed false with the gateway's reason, the
// token is gone, and the connection is a new session that must log in.
func TestFailedResumeSaysLogInAgain(t *testing.T) {
	srv := startGame(t, 30*time.Second)
	gw := srv.Gateway.Addr("game").String()
	net := wiretest.NewFlakyNet(t, gw)
	c := dial(t, net.Addr(), client.Options{HeartbeatEvery: -1, Reconnect: fastReconnect})
	enter(t, c, "carol", "attic")
	back := reconnects(c)
	net.Refusing.Store(true)
	net.Cut()
	suspended(t, srv, "carol")
	old := srv.Gateway.Sessions().Player("carol")
	elsewhere := dial(t, gw, client.Options{HeartbeatEvery: -1})
	enter(t, elsewhere, "carol", "attic")
	wiretest.Eventually(t, "the suspended session ended", func() bool { return srv.Gateway.Sessions().Get(old.ID) == nil })
	net.Refusing.Store(false)
	info := waitReconnect(t, back)
	if info.Resumed || info.Message == "" {
		t.Fatalf("OnReconnect %+v, want Resumed false with a message", info)
	}
	if tok := c.ResumeToken(); tok != "" {
		t.Fatalf("token %q after a failed resume", tok)
	}
	// A new session at the entry service: a route that needs a login is
	// dropped at the edge, unanswered.
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := c.Call(short, game.RouteMove, game.MoveRequest{X: 1, Y: 1}, nil); err != context.DeadlineExceeded {
		t.Fatalf("move before logging in again: %v", err)
	}
	enter(t, c, "carol2", "attic")
	if c.ResumeToken() == "" {
		t.Fatal("no token after logging in again")
	}
}

// TestReconnectWithoutResume: on a gateway without resume_window the
// client still reconnects, and says the session is new.
func TestReconnectWithoutResume(t *testing.T) {
	srv := startGame(t, 0)
	net := wiretest.NewFlakyNet(t, srv.Gateway.Addr("game").String())
	c := dial(t, net.Addr(), client.Options{HeartbeatEvery: -1, Reconnect: fastReconnect})
	back := reconnects(c)
	enter(t, c, "dave", "hall")
	if tok := c.ResumeToken(); tok != "" {
		t.Fatalf("a token %q with resume off", tok)
	}
	net.Cut()
	if info := waitReconnect(t, back); info.Resumed {
		t.Fatalf("OnReconnect %+v, want a new session", info)
	}
	enter(t, c, "dave", "hall")
}

// TestSilentNetworkIsNoticed: a network that stops carrying anything,
// without a FIN or a reset, is noticed by the heartbeats: after an
// interval with no echo the client drops the connection and reconnects.
func TestSilentNetworkIsNoticed(t *testing.T) {
	srv := startGame(t, 30*time.Second)
	net := wiretest.NewFlakyNet(t, srv.Gateway.Addr("game").String())
	c := dial(t, net.Addr(), client.Options{HeartbeatEvery: 150 * time.Millisecond, Reconnect: fastReconnect}) // under the gateway's 10 echoes a second
	enter(t, c, "erin", "vault")
	drops := make(chan client.DisconnectInfo, 4)
	c.OnDisconnect(func(d client.DisconnectInfo) { drops <- d })
	back := reconnects(c)
	net.DropDown.Store(true)
	select {
	case d := <-drops:
		if !errors.Is(d.Err, client.ErrHeartbeatTimeout) || !d.Reconnecting {
			t.Fatalf("OnDisconnect %+v, want ErrHeartbeatTimeout and a reconnect", d)
		}
	case <-time.After(patience):
		t.Fatal("the silent network went unnoticed")
	}
	net.DropDown.Store(false)
	if info := waitReconnect(t, back); !info.Resumed {
		t.Fatalf("OnReconnect %+v, want Resumed", info)
	}
	move(t, c, 1, 2)
}

// TestGiveUp: a network that stays down ends the client after its
// attempts, with a *GaveUpError. (The proxy accepts and closes at once:
// with a token held, an attempt succeeds only with the resume's answer.)
func TestGiveUp(t *testing.T) {
	srv := startGame(t, 30*time.Second)
	net := wiretest.NewFlakyNet(t, srv.Gateway.Addr("game").String())
	c := dial(t, net.Addr(), client.Options{HeartbeatEvery: -1,
		Reconnect: &client.Reconnect{Base: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 3}})
	enter(t, c, "hank", "cellar")
	net.Refusing.Store(true)
	net.Cut()
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatal("the client did not give up")
	}
	var g *client.GaveUpError
	if err := c.Err(); !errors.As(err, &g) || g.Attempts != 3 || !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Err() = %v, want a GaveUpError after 3 attempts", err)
	}
}

// TestKickEndsTheClient: a notice that ends the session is not a network
// flap: the client does not reconnect.
func TestKickEndsTheClient(t *testing.T) {
	srv := startGame(t, 30*time.Second)
	gw := srv.Gateway.Addr("game").String()
	c := dial(t, gw, client.Options{HeartbeatEvery: -1, Reconnect: fastReconnect})
	drops := make(chan client.DisconnectInfo, 1)
	c.OnDisconnect(func(d client.DisconnectInfo) { drops <- d })
	enter(t, c, "frank", "yard")
	enter(t, dial(t, gw, client.Options{HeartbeatEvery: -1}), "frank", "yard")
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatal("the kicked client did not end")
	}
	if d := <-drops; d.Reconnecting || d.Notice == nil || d.Notice.Code != string(codes.SessionKicked) {
		t.Fatalf("OnDisconnect %+v, want the kick and no reconnect", d)
	}
}

// TestRouteNames: CallName and OnPushName with the generated Routes, and
// RoutesFrom the example game's config gives the same table.
func TestRouteNames(t *testing.T) {
	srv := startGame(t, 0)
	c := dial(t, srv.Gateway.Addr("game").String(), client.Options{HeartbeatEvery: -1, Routes: game.Routes})
	got := make(chan json.RawMessage, 1)
	if err := c.OnPushName("position", func(b []byte) { got <- b }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var login game.LoginResponse
	if err := c.CallName(ctx, "login", map[string]string{"user": "gina"}, &login); err != nil || login.PlayerID != "gina" {
		t.Fatalf("login by name: %+v %v", login, err)
	}
	if err := c.CallName(ctx, "join_room", game.JoinRoomRequest{Room: "r"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.NotifyName("move", game.MoveRequest{X: 4, Y: 2}); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if string(b) != `{"player_id":"gina","x":4,"y":2}` {
			t.Fatalf("push %s", b)
		}
	case <-time.After(patience):
		t.Fatal("no push")
	}
	var unknown *client.UnknownRouteError
	if err := c.CallName(ctx, "teleport", nil, nil); !errors.As(err, &unknown) || unknown.Name != "teleport" {
		t.Fatalf("an unknown name: %v", err)
	}
	fromConfig, err := client.RoutesFrom("../configs/actors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if fromConfig.Len() != game.Routes.Len() {
		t.Fatalf("RoutesFrom: %d routes, the stubs %d", fromConfig.Len(), game.Routes.Len())
	}
	for _, name := range []string{"login", "move", "join_room", "position", "left"} {
		a, _ := fromConfig.ID(name)
		b, ok := game.Routes.ID(name)
		if !ok || a != b || fromConfig.Name(a) != name {
			t.Errorf("route %s: config %d, stubs %d", name, a, b)
		}
	}
}

// TestDelay: exponential from Base, capped at Max, less the jitter.
func TestDelay(t *testing.T) {
	r := client.Reconnect{Base: 100 * time.Millisecond, Max: time.Second, Jitter: 0.5}
	for _, c := range []struct {
		n    int
		u    float64
		want time.Duration
	}{
		{1, 0, 100 * time.Millisecond},
		{2, 0, 200 * time.Millisecond},
		{4, 0, 800 * time.Millisecond},
		{5, 0, time.Second},
		{500, 0, time.Second},
		{1, 0.5, 75 * time.Millisecond},
		{5, 0.5, 750 * time.Millisecond},
	} {
		if got := r.Delay(c.n, c.u); got != c.want {
			t.Errorf("Delay(%d, %v) = %v, want %v", c.n, c.u, got, c.want)
		}
	}
	if got := (client.Reconnect{Jitter: -1}).Delay(1, 0.9); got != 250*time.Millisecond {
		t.Errorf("no jitter, defaults: %v", got)
	}
}

// TestDialResumeSetup: a new client that resumes with Options.Resume sets
// its handlers in Options.Setup, before the first read: it sees
// session.resumed and the pushes queued for the suspended session, none
// lost to a handler set after Dial returned.
func TestDialResumeSetup(t *testing.T) {
	srv := startGame(t, 30*time.Second)
	gw := srv.Gateway.Addr("game").String()
	net := wiretest.NewFlakyNet(t, gw)
	first := dial(t, net.Addr(), client.Options{HeartbeatEvery: -1})
	other := dial(t, gw, client.Options{HeartbeatEvery: -1})
	enter(t, first, "alice", "plaza")
	enter(t, other, "bob", "plaza")
	token := first.ResumeToken()
	theirs := collect(other)
	net.Refusing.Store(true)
	net.Cut()
	suspended(t, srv, "alice")
	for i := 1; i <= 3; i++ {
		move(t, other, float64(i), 0)
		theirs.next(t)
	}
	statuses := make(chan client.Status, 8)
	var mine *pushes
	dial(t, gw, client.Options{HeartbeatEvery: -1, Resume: token, Setup: func(c *client.Client) {
		c.OnStatus(func(s client.Status) { statuses <- s })
		mine = collect(c)
	}})
	select {
	case s := <-statuses:
		if s.Code != "session.resumed" {
			t.Fatalf("the first status is %+v, want session.resumed", s)
		}
	case <-time.After(patience):
		t.Fatal("no session.resumed")
	}
	for i := 1; i <= 3; i++ {
		if p := mine.next(t); p.PlayerID != "bob" || p.X != float64(i) {
			t.Fatalf("queued push %d = %+v", i, p)
		}
	}
}
