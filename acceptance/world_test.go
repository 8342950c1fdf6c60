package acceptance

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// routeProfile is the example game's profile route.
const routeProfile = 2003

// exampleSecret is configs/actors.yaml's settings.token_secret of auth.
const exampleSecret = "dev-secret-change-me"

// token mints a login token as `gateway token` does (and as a game's
// account service would): "<user>.<expires>.<hex HMAC-SHA256>".
func token(secret, user string, expires time.Time) string {
	claim := user + "." + strconv.FormatInt(expires.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(claim))
	return claim + "." + hex.EncodeToString(mac.Sum(nil))
}

// serveExample starts the shipped example game (configs/actors.yaml, its
// storage included) with its store in dataDir, on a free port, and no
// admin server; devLogin overrides auth's settings.dev_login. The caller
// stops it (stop is safe to call twice; cleanup calls it too).
func serveExample(t *testing.T, dataDir string, devLogin bool) (addr string, stop func()) {
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
			c.Storage.DataDir = dataDir
			auth := c.Actor("auth")
			settings := map[string]any{}
			for k, v := range auth.Settings {
				settings[k] = v
			}
			settings["dev_login"] = devLogin
			auth.Settings = settings
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		wiretest.WaitGoroutines(t, before)
	}
	t.Cleanup(stop)
	return srv.Gateway.Addr("game").String(), stop
}

func dialGame(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mustFail makes a request that must fail with code.
func mustFail(t *testing.T, c *client.Client, route uint32, req any, code codes.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Call(ctx, route, req, nil)
	var ce *codes.Error
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("route %d %v: got %v, want %s", route, req, err, code)
	}
}

// TestExampleTokenLogin: the example game's login checks an HMAC-signed
// token; {"user": ...} is accepted only with dev_login.
func TestExampleTokenLogin(t *testing.T) {
	addr, _ := serveExample(t, t.TempDir(), false)
	c := dialGame(t, addr)
	soon := time.Now().Add(time.Hour)
	mustFail(t, c, routeLogin, map[string]string{"user": "alice"}, "auth.bad_request")
	mustFail(t, c, routeLogin, map[string]string{"token": token("wrong-secret", "alice", soon)}, "auth.bad_token")
	mustFail(t, c, routeLogin, map[string]string{"token": token(exampleSecret, "alice", time.Now().Add(-time.Minute))}, "auth.token_expired")
	good := token(exampleSecret, "alice", soon)
	mustFail(t, c, routeLogin, map[string]string{"token": "mallory" + good[len("alice"):]}, "auth.bad_token") // another user, same mac
	mustFail(t, c, routeLogin, map[string]string{"token": "not a token"}, "auth.bad_token")
	var resp struct {
		PlayerID string `json:"player_id"`
	}
	call(t, c, routeLogin, map[string]string{"token": good}, &resp)
	if resp.PlayerID != "alice" {
		t.Fatalf("player_id %q", resp.PlayerID)
	}
	call(t, c, routeJoinRoom, map[string]string{"room": "lobby"}, nil)
}

// TestExampleRemembersAcrossRestart: a player's room, last position and
// move count are kept in the players bucket and come back after the
// gateway restarts on the same data_dir.
func TestExampleRemembersAcrossRestart(t *testing.T) {
	data := t.TempDir()
	addr, stop := serveExample(t, data, true)
	c := dialGame(t, addr)
	login(t, c, "carol")
	call(t, c, routeJoinRoom, map[string]string{"room": "dungeon"}, nil)
	for i := 1; i <= 5; i++ {
		call(t, c, routeMove, map[string]int{"x": i, "y": 10 * i}, nil)
	}
	const want = `{"moves":5,"player_id":"carol","room":"dungeon","x":5,"y":50}`
	if got := profileOf(t, c); got != want {
		t.Fatalf("profile before the restart: %s, want %s", got, want)
	}
	c.Close()
	stop()

	addr, _ = serveExample(t, data, true)
	c = dialGame(t, addr)
	login(t, c, "carol")
	if got := profileOf(t, c); got != want {
		t.Fatalf("profile after the restart: %s, want %s", got, want)
	}
	login(t, dialGame(t, addr), "dave")
}

func profileOf(t *testing.T, c *client.Client) string {
	t.Helper()
	var raw rawJSON
	call(t, c, routeProfile, map[string]any{}, &raw)
	return string(raw)
}

// rawJSON keeps a response body as it came.
type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}
