package luavm_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/luatest"
)

// backend is the HTTP server the VMs call in these tests: a real one on
// loopback, which records what reached it.
type backend struct {
	*httptest.Server
	hits      atomic.Int64  // requests that reached a handler
	cancelled atomic.Int64  // /slow requests whose client went away
	release   chan struct{} // closed to let /block requests answer
}

func newBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// A header name sent in lower case comes back canonical; a
		// repeated one comes back joined.
		w.Header()["x-lower-case"] = []string{"v"}
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "path": r.URL.RequestURI(), "body": string(body), "host": r.Host,
			"x_token": r.Header.Get("X-Token"), "x_num": r.Header.Get("X-Num"),
		})
	})
	mux.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/status/"), &code)
		w.WriteHeader(code)
		io.WriteString(w, "status body")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/echo", http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			b.cancelled.Add(1)
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-b.release:
			io.WriteString(w, "released")
		case <-r.Context().Done():
			b.cancelled.Add(1)
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 2000)) // Content-Length is set
	})
	mux.HandleFunc("/big-chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 20; i++ {
			io.WriteString(w, strings.Repeat("y", 100))
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
	})
	mux.HandleFunc("/exact", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("z", 1000))
	})
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		// Small on the wire, over the cap once decoded.
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, strings.Repeat("g", 5000))
		zw.Close()
	})
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
		b.Close()
	})
	return b
}

// closedPort returns a loopback host:port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestHTTP covers shield.http.request (SPEC §11) against a real server.
func TestHTTP(t *testing.T) {
	b := newBackend(t)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.hits.Add(1) }))
	defer tlsSrv.Close()
	base := b.URL
	host := strings.TrimPrefix(base, "http://")
	refused := closedPort(t)
	tlsHost := strings.TrimPrefix(tlsSrv.URL, "https://")

	prelude := fmt.Sprintf(`local BASE = %q
local REFUSED = %q
local TLS = %q
local function get(path) return shield.http.request({ url = BASE .. path }) end
`, base, "http://"+refused, "https://"+tlsHost)
	cases := []luaCase{
		{name: "GET returns status, canonical headers and body",
			body: `local r = get("/echo?q=1")
			       local b = shield.json.decode(r.body)
			       return { status = r.status, lower = r.headers["X-Lower-Case"], multi = r.headers["X-Multi"],
			                ctype = r.headers["Content-Type"], method = b.method, path = b.path }`,
			want: `{"ctype":"application/json","lower":"v","method":"GET","multi":"a, b","path":"/echo?q=1","status":200}`},
		{name: "POST sends its body and headers",
			body: `local r = shield.http.request({ method = "POST", url = BASE .. "/echo", body = "hello",
			         headers = { ["x-token"] = "t0k", ["X-Num"] = 7 } })
			       local b = shield.json.decode(r.body)
			       return { b.method, b.body, b.x_token, b.x_num }`,
			want: `["POST","hello","t0k","7"]`},
		{name: "a Host header sets the request's host",
			body: `local r = shield.http.request({ url = BASE .. "/echo", headers = { Host = "game.example" } })
			       return shield.json.decode(r.body).host`,
			want: `"game.example"`},
		{name: "an error status is returned, not raised",
			body: `local r = get("/status/503") return { r.status, r.body }`, want: `[503,"status body"]`},
		{name: "a 404 is returned", body: `return get("/nowhere").status`, want: `404`},
		{name: "a redirect is not followed",
			body: `local r = get("/redirect") return { r.status, r.headers.Location }`, want: `[302,"/echo"]`},
		{name: "a body of exactly max_response_bytes is returned", body: `return #get("/exact").body`, want: `1000`},
		{name: "a body over max_response_bytes (Content-Length) raises", body: `return get("/big")`,
			want: "client_rpc.resource_exhausted", msg: `max_response_bytes \(1000\)`},
		{name: "a chunked body over max_response_bytes raises", body: `return get("/big-chunked")`,
			want: "client_rpc.resource_exhausted"},
		{name: "the cap applies to the decoded body", body: `return get("/gzip")`, want: "client_rpc.resource_exhausted"},
		{name: "a host:port not allowed raises unavailable naming it",
			body: `return shield.http.request({ url = "http://127.0.0.2:` + strings.Split(host, ":")[1] + `/echo" })`,
			want: "client_rpc.unavailable", msg: `^shield\.http\.request: 127\.0\.0\.2:\d+ is not in lua\.http\.allow$`},
		{name: "a URL without a port means 80", body: `return shield.http.request({ url = "http://127.0.0.1/echo" })`,
			want: "client_rpc.unavailable", msg: `127\.0\.0\.1:80 is not in lua\.http\.allow`},
		{name: "an https URL without a port means 443", body: `return shield.http.request({ url = "https://Example.COM/x" })`,
			want: "client_rpc.unavailable", msg: `example\.com:443 is not in lua\.http\.allow`},
		{name: "hosts compare case-insensitively",
			body: `local port = BASE:match(":(%d+)$")
			       return { shield.http.request({ url = "http://localhost:" .. port .. "/status/200" }).status,
			                shield.http.request({ url = "http://LOCALHOST:" .. port .. "/status/200" }).status }`,
			want: `[200,200]`},
		{name: "a refused connection raises unavailable naming the host:port",
			body: `return shield.http.request({ url = REFUSED .. "/x" })`,
			want: "client_rpc.unavailable", msg: "^shield\\.http\\.request: " + strings.ReplaceAll(refused, ".", `\.`) + `: .*refused`},
		{name: "a TLS failure raises unavailable naming the host:port",
			body: `return shield.http.request({ url = TLS .. "/x" })`,
			want: "client_rpc.unavailable", msg: strings.ReplaceAll(tlsHost, ".", `\.`) + `: .*(certificate|x509)`},
		{name: "the error hides the URL's query",
			body: `local ok, e = pcall(shield.http.request, { url = REFUSED .. "/x?secret=hunter2" })
			       return { ok = ok, code = e.code, leak = e.message:find("hunter2", 1, true) ~= nil }`,
			want: `{"code":"client_rpc.unavailable","leak":false,"ok":false}`},
		{name: "lua.http.timeout raises timeout, catchable",
			body: `local t0 = shield.now()
			       local ok, e = pcall(get, "/slow")
			       return { ok = ok, code = e.code, soon = shield.now() - t0 < 2000 }`,
			want: `{"code":"client_rpc.timeout","ok":false,"soon":true}`},
		{name: "pcall around a request that succeeds",
			body: `local ok, r = pcall(shield.http.request, { url = BASE .. "/status/201" }) return { ok, r.status }`,
			want: `[true,201]`},
		{name: "inside a coroutine.wrap", body: `return coroutine.wrap(function() return get("/status/204").status end)()`, want: `204`},
		{name: "url is required", body: `return shield.http.request({})`, want: "client_rpc.handler_failed"},
		{name: "the argument is a table", body: `return shield.http.request(BASE)`, want: "client_rpc.handler_failed"},
		{name: "an unknown field is refused",
			body: `local ok, e = pcall(shield.http.request, { url = BASE, timeout = 5 }) return { ok, type(e), e:find("timeout", 1, true) ~= nil }`,
			want: `[false,"string",true]`},
		{name: "a scheme other than http and https is refused", body: `return shield.http.request({ url = "ftp://127.0.0.1/" })`, want: "client_rpc.handler_failed"},
		{name: "a header value with a line break is refused",
			body: `return shield.http.request({ url = BASE .. "/echo", headers = { ["X-A"] = "a\r\nX-B: b" } })`, want: "client_rpc.handler_failed"},
		{name: "a bad header name is refused",
			body: `return shield.http.request({ url = BASE .. "/echo", headers = { ["X A"] = "a" } })`, want: "client_rpc.handler_failed"},
		{name: "a bad method is refused", body: `return shield.http.request({ url = BASE, method = "GE T" })`, want: "client_rpc.handler_failed"},
		{name: "a body that is not a string is refused", body: `return shield.http.request({ url = BASE, body = {} })`, want: "client_rpc.handler_failed"},
	}
	slow := luatest.ActorYAML("slowbudget", "handler_timeout: 200ms", "\n      - {id: 900, name: slow, binding: slow}")
	slowScript := "local M = {}\n" + prelude + "function M.slow(ctx, client, req) return get(\"/slow\") end\nreturn M\n"
	// The DNS case runs last, apart from the table: whether it can pass
	// depends on the machine's resolver.
	dns := luaCase{name: "DNS failure", body: `return shield.http.request({ url = "http://nosuch.invalid/" })`}
	a, aScript := caseActor("a", "", prelude, append(cases, dns))
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML(fmt.Sprintf(`lua:
  http:
    allow: [%q, %q, %q, "nosuch.invalid:80", "LocalHost:%s"]
    timeout: 1s
    max_response_bytes: 1000
`, host, refused, tlsHost, strings.Split(host, ":")[1]), a, slow),
		"a.lua": aScript, "slowbudget.lua": slowScript,
	})
	before := b.hits.Load()
	runCases(t, w, "a", cases)

	t.Run("refusals sent nothing", func(t *testing.T) {
		// Every case that reached the backend is one of the allowed ones:
		// count them instead of trusting the messages.
		const reached = 15 // the requests of the cases above that pass every check
		if got := b.hits.Load() - before; got != reached {
			t.Errorf("backend saw %d requests, want %d", got, reached)
		}
	})
	t.Run("a timed-out request is cancelled", func(t *testing.T) {
		luatest.Wait(t, 2*time.Second, "the backend sees the cancel", func() bool { return b.cancelled.Load() >= 1 })
	})
	t.Run("the handler's budget caps the request", func(t *testing.T) {
		t0 := time.Now()
		luatest.Expect(t, w.Ask(t, "slowbudget", 900, "{}"), "client_rpc.timeout", "")
		if d := time.Since(t0); d > 800*time.Millisecond {
			t.Errorf("took %v: the 200ms budget, not the 1s lua.http.timeout, should end it", d)
		}
	})
	t.Run("DNS failure raises unavailable", func(t *testing.T) {
		r := w.Ask(t, "a", uint32(len(cases)+1), "{}")
		if r.Err != nil && r.Err.Code == "client_rpc.timeout" {
			t.Skip("this machine's resolver does not answer within lua.http.timeout")
		}
		luatest.Expect(t, r, "client_rpc.unavailable", `nosuch\.invalid:80: .*no such host`)
	})
}

// httpWaiter is a service whose route 1 waits on the backend's /block,
// route 2 answers at once, and route 3 makes a second request.
const httpWaiter = `local M = {}
function M.block(ctx, client, req) return shield.http.request({ url = BASE .. "/block" }).body end
function M.ping(ctx, client, req) return "pong" end
function M.again(ctx, client, req) return shield.http.request({ url = BASE .. "/status/200" }).status end
return M`

func startWaiter(t *testing.T, b *backend, opts string) *luatest.World {
	t.Helper()
	host := strings.TrimPrefix(b.URL, "http://")
	return startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML(fmt.Sprintf("lua: {http: {allow: [%q]}}\n", host),
			luatest.ActorYAML("a", opts, `
      - {id: 1, name: block, binding: block}
      - {id: 2, name: ping, binding: ping}
      - {id: 3, name: again, binding: again}`)),
		"a.lua": fmt.Sprintf("local BASE = %q\n", b.URL) + httpWaiter,
	})
}

// TestHTTPSuspendsOnlyItsTask: while one request waits on the backend,
// the VM serves other messages; the request counts against max_pending.
func TestHTTPSuspendsOnlyItsTask(t *testing.T) {
	b := newBackend(t)
	w := startWaiter(t, b, "max_pending: 1")
	id := w.Send(t, "a", 1, "{}")
	luatest.Wait(t, 5*time.Second, "the request reaches the backend", func() bool { return b.hits.Load() == 1 })
	luatest.Expect(t, w.Ask(t, "a", 2, "{}"), `"pong"`, "")
	luatest.Expect(t, w.Ask(t, "a", 3, "{}"), "client_rpc.busy", `max_pending \(1\)`)
	if n := len(w.Gateway.Responses(id)); n != 0 {
		t.Fatalf("the blocked request answered early (%d responses)", n)
	}
	close(b.release)
	luatest.Expect(t, w.Await(t, id), `"released"`, "")
	luatest.Expect(t, w.Ask(t, "a", 3, "{}"), `200`, "") // the slot is free again
}

// TestHTTPCancelledAtStop: a request in flight when the runtime stops is
// cancelled (the backend sees its client go), its handler answers
// unavailable, and no goroutine is left behind (the world checks).
func TestHTTPCancelledAtStop(t *testing.T) {
	b := newBackend(t)
	w := startWaiter(t, b, "")
	id := w.Send(t, "a", 1, "{}")
	luatest.Wait(t, 5*time.Second, "the request reaches the backend", func() bool { return b.hits.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Runtime.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	luatest.Expect(t, w.Await(t, id), "client_rpc.unavailable", "stopping")
	luatest.Wait(t, 5*time.Second, "the backend sees the cancel", func() bool { return b.cancelled.Load() == 1 })
}
