package bootstrap_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/luatest"
)

// adminDo sends one request to the game's admin API and returns the status
// and the body.
func (g *reloadGame) adminDo(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+g.srv.Admin.Addr()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

const bearer = "Bearer s3cret"

// loginSvc is svc's script with a login that binds the session to player
// req.user on svc (by shard), and a method for /admin/call.
func loginSvc() string {
	return strings.Replace(svcLua("v1"), "return M", `function M.login(ctx, client, req)
  shield.client.bind(client, req.user, "svc")
  return {v = "v1"}
end
function M.add(ctx, a, b) return a + b, "sum" end
function M.nothing(ctx) end
return M`, 1)
}

const loginRoute = "        - {id: 5, name: login, binding: login, requires_auth: false}\n"

// TestAdminAuth: SPEC §12's order of checks, for every endpoint: 404 for
// an unknown path, 401 without the token, with another or with another
// scheme, 405 for a wrong method, and the scheme's case does not matter.
func TestAdminAuth(t *testing.T) {
	g := startReloadGame(t, nil)
	for _, ep := range []struct{ method, path, body string }{
		{"GET", "/admin/sessions", ""},
		{"POST", "/admin/kick", `{"session_id": 1}`},
		{"POST", "/admin/drain", `{"session_id": 1}`},
		{"POST", "/admin/call", `{"service": "other", "method": "nothing"}`},
		{"POST", "/admin/reload", ""},
	} {
		wrong := "POST"
		if ep.method == "POST" {
			wrong = "GET"
		}
		for _, tc := range []struct {
			name, method, path, token string
			want                      int
		}{
			{"unknown path", ep.method, ep.path + "x", bearer, 404},
			{"unknown path without a token", ep.method, "/admin/nope", "", 404},
			{"no token", ep.method, ep.path, "", 401},
			{"wrong token", ep.method, ep.path, "Bearer s3cre", 401},
			{"longer token", ep.method, ep.path, "Bearer s3cret2", 401},
			{"other scheme", ep.method, ep.path, "Basic s3cret", 401},
			{"wrong method before the token", wrong, ep.path, "", 401},
			{"wrong method", wrong, ep.path, bearer, 405},
			{"scheme in lower case", ep.method, ep.path, "bearer s3cret", 200},
		} {
			if code, body := g.adminDo(t, tc.method, tc.path, tc.token, ep.body); code != tc.want {
				t.Errorf("%s %s %s (%s): %d %s, want %d", tc.method, tc.path, tc.token, tc.name, code, body, tc.want)
			}
		}
	}
	// /metrics and the rest need no token.
	if code, _ := g.adminDo(t, "GET", "/metrics", "", ""); code != 200 {
		t.Errorf("/metrics: %d", code)
	}
}

// TestAdminOffWithoutToken: with admin.token empty every /admin/ path is
// 404, with or without a token.
func TestAdminOffWithoutToken(t *testing.T) {
	g := startReloadGame(t, map[string]string{"game.yaml": strings.Replace(reloadYAML, "    token: s3cret\n", "", 1)})
	for _, p := range []string{"/admin/sessions", "/admin/reload", "/admin/", "/admin/nope"} {
		for _, tok := range []string{"", bearer, "Bearer "} {
			if code, _ := g.adminDo(t, "GET", p, tok, ""); code != 404 {
				t.Errorf("GET %s with %q: %d, want 404", p, tok, code)
			}
			if code, _ := g.adminDo(t, "POST", p, tok, "{}"); code != 404 {
				t.Errorf("POST %s with %q: %d, want 404", p, tok, code)
			}
		}
	}
}

// TestAdminBadRequests: 400 for a body that is not the JSON asked for and
// for a limit over 10,000.
func TestAdminBadRequests(t *testing.T) {
	g := startReloadGame(t, nil)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/admin/sessions?limit=10001", ""},
		{"GET", "/admin/sessions?limit=-1", ""},
		{"GET", "/admin/sessions?limit=many", ""},
		{"POST", "/admin/kick", ""},
		{"POST", "/admin/kick", "not json"},
		{"POST", "/admin/kick", `{}`},
		{"POST", "/admin/kick", `{"player_id": "a", "session_id": 1}`},
		{"POST", "/admin/kick", `{"session_id": "one"}`},
		{"POST", "/admin/kick", `{"player_id": "a"} {"player_id": "b"}`},
		{"POST", "/admin/call", `{"method": "add"}`},
		{"POST", "/admin/call", `{"service": "svc"}`},
		{"POST", "/admin/call", `{"service": "svc", "method": "add", "args": 3}`},
		{"POST", "/admin/call", `[]`},
	} {
		if code, body := g.adminDo(t, tc.method, tc.path, bearer, tc.body); code != 400 {
			t.Errorf("%s %s %q: %d %s, want 400", tc.method, tc.path, tc.body, code, body)
		}
	}
	if code, body := g.adminDo(t, "GET", "/admin/sessions?limit=10000", bearer, ""); code != 200 {
		t.Errorf("limit=10000: %d %s", code, body)
	}
}

// adminSession is one entry of /admin/sessions, as decoded.
type adminSession struct {
	SessionID   uint64  `json:"session_id"`
	PlayerID    *string `json:"player_id"`
	Target      string  `json:"target"`
	Epoch       uint64  `json:"epoch"`
	Listener    string  `json:"listener"`
	RemoteAddr  string  `json:"remote_addr"`
	ConnectedAt string  `json:"connected_at"`
	Suspended   bool    `json:"suspended"`
}

// TestAdminSessionsAndKick: the sessions list (every field, ordered by
// session_id, limit, player_id), and a kick by player and by session,
// which the client sees as the session.kicked notice with the reason.
func TestAdminSessionsAndKick(t *testing.T) {
	g := startReloadGame(t, map[string]string{
		"game.yaml": strings.Replace(reloadYAML, "        - {id: 3,", loginRoute+"        - {id: 3,", 1),
		"svc.lua":   loginSvc(),
	})
	before := time.Now().Add(-time.Second)
	anon := g.dial(t)
	mustCall(t, anon, 1, struct{}{})
	alice := g.dial(t)
	mustCall(t, alice, 5, map[string]string{"user": "alice"})
	notices := make(chan string, 2)
	alice.OnNotice(func(code, msg string) { notices <- code + " " + msg })

	var list struct{ Sessions []adminSession }
	decodeOK(t, g, "GET", "/admin/sessions", "", &list)
	if len(list.Sessions) != 2 || list.Sessions[0].SessionID >= list.Sessions[1].SessionID {
		t.Fatalf("sessions: %+v", list.Sessions)
	}
	var a, n adminSession
	for _, s := range list.Sessions {
		if s.PlayerID != nil {
			a = s
		} else {
			n = s
		}
	}
	if a.PlayerID == nil || *a.PlayerID != "alice" || a.Epoch != 2 || !strings.HasPrefix(a.Target, "svc/") ||
		a.Listener != "game" || a.Suspended || a.RemoteAddr != alice.LocalAddr().String() {
		t.Errorf("alice's entry: %+v (her address %s)", a, alice.LocalAddr())
	}
	if n.Epoch != 1 || n.Target == "" || n.RemoteAddr != anon.LocalAddr().String() {
		t.Errorf("the anonymous entry: %+v", n)
	}
	at, err := time.Parse(time.RFC3339, a.ConnectedAt)
	if err != nil || at.Before(before) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("connected_at %q: %v", a.ConnectedAt, err)
	}
	decodeOK(t, g, "GET", "/admin/sessions?limit=1", "", &list)
	if len(list.Sessions) != 1 {
		t.Errorf("limit=1: %d sessions", len(list.Sessions))
	}
	decodeOK(t, g, "GET", "/admin/sessions?player_id=alice", "", &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != a.SessionID {
		t.Errorf("player_id=alice: %+v", list.Sessions)
	}
	decodeOK(t, g, "GET", "/admin/sessions?player_id=bob", "", &list)
	if list.Sessions == nil || len(list.Sessions) != 0 {
		t.Errorf("player_id=bob: %+v, want []", list.Sessions)
	}

	var kicked struct{ Kicked int }
	decodeOK(t, g, "POST", "/admin/kick", `{"player_id": "bob"}`, &kicked)
	if kicked.Kicked != 0 {
		t.Errorf("kick bob: %d", kicked.Kicked)
	}
	decodeOK(t, g, "POST", "/admin/kick", `{"player_id": "alice", "reason": "cheating"}`, &kicked)
	if kicked.Kicked != 1 {
		t.Errorf("kick alice: %d", kicked.Kicked)
	}
	select {
	case got := <-notices:
		if got != "session.kicked cheating" {
			t.Errorf("alice's notice: %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("alice got no notice")
	}
	<-alice.Done()
	decodeOK(t, g, "POST", "/admin/kick", `{"session_id": `+jsonNumber(n.SessionID)+`}`, &kicked)
	if kicked.Kicked != 1 {
		t.Errorf("kick the anonymous session: %d", kicked.Kicked)
	}
	<-anon.Done()
	luatest.Wait(t, 5*time.Second, "no session left", func() bool { return g.srv.Gateway.Sessions().Len() == 0 })
	_ = client.ErrClosed
}

// TestAdminCall: a method's results, [] for none; an error as code and
// message; hooks and client handlers refused as shield.call refuses them.
func TestAdminCall(t *testing.T) {
	g := startReloadGame(t, map[string]string{"svc.lua": loginSvc()})
	for _, tc := range []struct{ body, want string }{
		{`{"service": "svc", "key": "k", "method": "add", "args": [2, 3]}`, `{"result":[5,"sum"]}`},
		{`{"service": "svc", "key": 7, "method": "add", "args": [2, 3]}`, `{"result":[5,"sum"]}`},
		{`{"service": "svc", "key": "x", "method": "nothing"}`, `{"result":[]}`},
		{`{"service": "svc", "key": "x", "method": "nothing", "args": []}`, `{"result":[]}`},
		{`{"service": "other", "method": "ping"}`, `client_rpc.unavailable`},
		{`{"service": "svc", "method": "add", "args": [2, 3]}`, `client_rpc.unavailable`},
		{`{"service": "svc", "key": "k", "method": "init"}`, `client_rpc.unavailable`},
		{`{"service": "svc", "key": "k", "method": "hello"}`, `client_rpc.unavailable`},
		{`{"service": "svc", "key": "k", "method": "reload_save"}`, `client_rpc.unavailable`},
		{`{"service": "svc", "key": "k", "method": "missing"}`, `client_rpc.unavailable`},
		{`{"service": "nobody", "method": "x"}`, `client_rpc.unavailable`},
		{`{"service": "svc", "key": "k", "method": "add", "args": [2, {}]}`, `client_rpc.handler_failed`},
	} {
		code, body := g.adminDo(t, "POST", "/admin/call", bearer, tc.body)
		if code != 200 {
			t.Errorf("%s: %d %s", tc.body, code, body)
			continue
		}
		if strings.HasPrefix(tc.want, "{") {
			if strings.TrimSpace(body) != tc.want {
				t.Errorf("%s: %s, want %s", tc.body, body, tc.want)
			}
			continue
		}
		var e struct{ Code, Message string }
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != tc.want || e.Message == "" {
			t.Errorf("%s: %s, want code %s with a message", tc.body, body, tc.want)
		}
	}
}

// TestAdminReload: POST /admin/reload answers after the swap, ok or with
// the errors.
func TestAdminReload(t *testing.T) {
	g := startReloadGame(t, nil)
	c := g.dial(t)
	g.write(t, "svc.lua", svcLua("v2"))
	var ok struct {
		OK     bool
		Errors []string
	}
	decodeOK(t, g, "POST", "/admin/reload", "", &ok)
	if !ok.OK || ok.Errors != nil {
		t.Fatalf("reload: %+v", ok)
	}
	if a := mustCall(t, c, 1, struct{}{}); a.V != "v2" {
		t.Errorf("after /admin/reload: %+v", a)
	}
	g.write(t, "svc.lua", "return 42")
	g.edit(t, "idle_timeout: 60s", "idle_timeout: 61s")
	decodeOK(t, g, "POST", "/admin/reload", "", &ok)
	if ok.OK || len(ok.Errors) != 2 {
		t.Fatalf("a failed reload: %+v, want two errors", ok)
	}
}

func decodeOK(t *testing.T, g *reloadGame, method, path, body string, v any) {
	t.Helper()
	code, out := g.adminDo(t, method, path, bearer, body)
	if code != 200 {
		t.Fatalf("%s %s: %d %s", method, path, code, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s %s: %v in %s", method, path, err, out)
	}
}

func jsonNumber(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
