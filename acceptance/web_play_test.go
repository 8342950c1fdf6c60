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
	pages := map[string]string{} // user -> page session
	for _, pair := range [][2]string{{"alice", "bob"}, {"bob", "alice"}} {
		url := fmt.Sprintf("http://%s/play/?user=%s&room=%s&auto=1&expect=%s", admin, pair[0], room, pair[1])
		pages[pair[0]] = b.open(ctx, url)
	}
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
	pages := map[string]string{}
	for _, pair := range [][2]string{{"carol", "dan"}, {"dan", "carol"}} {
		pages[pair[0]] = b.open(ctx, fmt.Sprintf("http://%s/play/?user=%s&room=%s&auto=1&expect=%s", admin, pair[0], room, pair[1]))
	}
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
