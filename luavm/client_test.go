package luavm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
)

// TestClientUserdata checks the handler's client (client.go): read-only by
// construction, and seen as the table of its fields by pairs, ipairs,
// next, shield.json.encode, the JSON mapping between VMs and shield.log.
func TestClientUserdata(t *testing.T) {
	const fields = `{"epoch":3,"gateway":"gw-test","remote_addr":"10.0.0.1:5555","request_id":REQ,"route":"rROUTE","route_id":ROUTE,"session_id":7}`
	cases := []luaCase{
		{name: "a field cannot be set", body: `client.session_id = 8`, want: "client_rpc.handler_failed"},
		{name: "a new field cannot be set", body: `client.mine = 1`, want: "client_rpc.handler_failed"},
		{name: "the error says why", body: `local ok, err = pcall(function() client.x = 1 end) return err:find("client is read-only", 1, true) ~= nil`, want: `true`},
		{name: "type", body: `return type(client)`, want: `"userdata"`},
		{name: "no metatable to take", body: `return getmetatable(client)`, want: `false`},
		{name: "an unknown field is nil", body: `return { client.nope == nil, client[1] == nil }`, want: `[true,true]`},
		{name: "pairs", body: `local t = {} for k, v in pairs(client) do t[k] = v end return t`, want: fields},
		{name: "pairs keeps the fields' order", body: `local t = {} for k in pairs(client) do t[#t + 1] = k end return t`,
			want: `["session_id","epoch","gateway","route","route_id","request_id","remote_addr"]`},
		{name: "next", body: `local k, v = next(client) return { k, v, (next(client, "remote_addr")) }`, want: `["session_id",7]`},
		{name: "ipairs", body: `local n = 0 for _ in ipairs(client) do n = n + 1 end return n`, want: `0`},
		{name: "pairs of a non-table still fails", body: `local ok, err = pcall(pairs, nil) return { ok, err:find("table expected", 1, true) ~= nil }`, want: `[false,true]`},
		{name: "next and ipairs of tables", body: `local t = { 10, 20, x = 1 } local n = 0 for _, v in ipairs(t) do n = n + v end
			local k = next(t) return { n, k, next({}) }`, want: `[30,1]`},
		{name: "json.encode", body: `return shield.json.decode(shield.json.encode(client))`, want: fields},
		{name: "a copy to another VM", body: `return shield.call("b", "echo", client)`, want: fields},
		{name: "in a table returned", body: `return { c = client }`, want: `{"c":` + fields + `}`},
		{name: "tostring", body: `return tostring(client)`, want: `"client: session 7, epoch 3"`},
		{name: "logged as its fields", body: `shield.log.info("client log", "c", client) return ""`, want: `""`},
		{name: "a ref of it", body: `return shield.client.ref(client)`, want: `{"epoch":3,"gateway":"gw-test","session_id":7}`},
		{name: "as a key and compared", body: `local t = { [client] = 1 } return { t[client], client == client }`, want: `[1,true]`},
	}
	a, aScript := caseActor("a", "", `
function M.client_bound(ctx, client)
  shield.log.info("bound hook", "type", type(client), "fields", shield.json.encode(client), "route", client.route)
end
function M.client_disconnected(ctx, client, reason)
  local ok = pcall(function() client.epoch = 0 end)
  shield.log.info("disconnected hook", "fields", shield.json.encode(client), "writable", ok)
end`, cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", "")),
		"a.lua":       aScript,
		"b.lua":       `local M = {} function M.echo(ctx, v) return v end return M`,
	})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := w.Send(t, "a", uint32(i+1), "{}")
			want := c.want
			if len(want) > 0 && (want[0] == '{' || want[0] == '[') {
				want = replaceAll(want, "REQ", fmt.Sprint(id), "ROUTE", fmt.Sprint(i+1))
			}
			luatest.Expect(t, w.Await(t, id), want, c.msg)
		})
	}
	if recs := w.Logs.Records("client log"); len(recs) != 1 || fmt.Sprint(recs[0]["c"].(map[string]any)["session_id"]) != "7" {
		t.Fatalf("client log: %v", recs)
	}

	// The hooks' clients: a bound session's ref and remote address; a
	// disconnected one's ref only.
	ref := egress.ClientRef{SessionID: 9, Epoch: 2, PlayerID: "p9", Gateway: "gw-test"}
	w.Runtime.Control(luatest.ActorID("a"), &ingress.Bound{Ref: ref, RemoteAddr: "10.0.0.9:9"})
	w.Runtime.Control(luatest.ActorID("a"), &ingress.Disconnected{Ref: ref, Reason: "closed"})
	bound := w.Logs.WaitRecords(t, "bound hook", 1)[0]
	if bound["type"] != "userdata" || bound["route"] != "nil" ||
		bound["fields"] != `{"epoch":2,"gateway":"gw-test","player_id":"p9","remote_addr":"10.0.0.9:9","session_id":9}` {
		t.Fatalf("bound hook: %v", bound)
	}
	gone := w.Logs.WaitRecords(t, "disconnected hook", 1)[0]
	if gone["writable"] != false || gone["fields"] != `{"epoch":2,"gateway":"gw-test","player_id":"p9","session_id":9}` {
		t.Fatalf("disconnected hook: %v", gone)
	}
}

// replaceAll replaces each old, new pair in s.
func replaceAll(s string, pairs ...string) string {
	for i := 0; i+1 < len(pairs); i += 2 {
		for {
			j := indexOf(s, pairs[i])
			if j < 0 {
				break
			}
			s = s[:j] + pairs[i+1] + s[j+len(pairs[i]):]
		}
	}
	return s
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestKeptClientsStayTheirs checks that a client a script keeps is its
// own: the VM reuses the task of a handler that answered at once
// (VM.recycle), never the client, so every kept client still shows the
// frame it came with, whatever ran since (handlers that answered at once,
// and one that suspended in shield.sleep).
func TestKeptClientsStayTheirs(t *testing.T) {
	cases := []luaCase{
		{name: "keep", body: `kept[#kept + 1] = client return ""`},
		{name: "keep after a sleep", body: `shield.sleep(1) kept[#kept + 1] = client return ""`},
		{name: "list", body: `local ids = {} for i, c in ipairs(kept) do ids[i] = c.request_id end return ids`},
	}
	a, aScript := caseActor("a", "", `local kept = {}`, cases)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	var want []string
	for i := 0; i < 20; i++ {
		route := uint32(1)
		if i%5 == 4 {
			route = 2
		}
		id := w.Send(t, "a", route, "{}")
		luatest.Expect(t, w.Await(t, id), `""`, "")
		want = append(want, fmt.Sprint(id))
	}
	luatest.Expect(t, w.Ask(t, "a", 3, "{}"), "["+strings.Join(want, ",")+"]", "")
}
