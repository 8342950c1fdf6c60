package luavm_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
)

// TestShieldAPI covers the shield functions that need no other service.
func TestShieldAPI(t *testing.T) {
	cases := []luaCase{
		{name: "self", body: `local name, inst = shield.self() return { name = name, inst = inst }`, want: `{"inst":0,"name":"a"}`},
		{name: "ctx", body: `return { service = ctx.service, instance = ctx.instance, future = ctx.deadline > shield.now() }`, want: `{"future":true,"instance":0,"service":"a"}`},
		{name: "ctx is read-only", body: `ctx.user = "x"`, want: "client_rpc.handler_failed"},
		{name: "ctx has no metatable to take", body: `return getmetatable(ctx)`, want: `false`},
		{name: "ctx.deadline is the run's own across a suspension", body: `
			local d = ctx.deadline
			local other
			shield.timeout(1, function() other = ctx.deadline end)
			shield.sleep(30)
			return { same = d == ctx.deadline, other_differs = other ~= nil and other ~= d }`,
			want: `{"other_differs":true,"same":true}`},
		{name: "log with fields", body: `shield.log.info("api log", "n", 3, "f", 1.5, "s", "x", "b", true, "t", { k = { 1, 2 } }) return ""`, want: `""`},
		{name: "log levels", body: `shield.log.debug("lvl") shield.log.warn("lvl") shield.log.error("lvl") return ""`, want: `""`},
		{name: "log with a key and no value", body: `shield.log.info("odd", "k") return ""`, want: `""`},
		{name: "log needs a message", body: `shield.log.info()`, want: "client_rpc.handler_failed"},
		{name: "json round trip", body: `local s = '{"a":[1,2,{"b":null}],"c":[],"d":{},"e":"é","f":-0.5,"g":[[]]}'
		                                  return shield.json.encode(shield.json.decode(s)) == s`, want: `true`},
		{name: "json encode sorts keys and keeps integers", body: `return shield.json.encode({ b = 3, a = { 1, 2.5 }, c = "<&>" })`, want: `"{\"a\":[1,2.5],\"b\":3,\"c\":\"<&>\"}"`},
		{name: "json encode of scalars", body: `return { shield.json.encode(3), shield.json.encode("x"), shield.json.encode(true), shield.json.encode(shield.null) }`, want: `["3","\"x\"","true","null"]`},
		{name: "json encode of a function", body: `return shield.json.encode({ f = print })`, want: "client_rpc.handler_failed"},
		{name: "json encode of invalid UTF-8", body: `return shield.json.encode("\255")`, want: "client_rpc.handler_failed"},
		{name: "json encode of a cycle", body: `local t = {} t.t = t return shield.json.encode(t)`, want: "client_rpc.handler_failed"},
		{name: "json encode of one big string many times is capped", body: `
			local s = string.rep("x", 1048576) local t = {} for i = 1, 100 do t[i] = s end
			return shield.json.encode(t)`, want: "client_rpc.resource_exhausted"},
		{name: "a response of one big string many times is capped", body: `
			local s = string.rep("x", 1048576) local t = {} for i = 1, 100 do t[i] = s end
			return t`, want: "client_rpc.resource_exhausted"},
		{name: "pcall of a Go function that returns", body: `return { pcall(tostring, 12) }`, want: `[true,"12"]`},
		{name: "pcall of a Go function that returns nothing", body: `local t = { pcall(shield.log.info, "x") } return #t`, want: `1`},
		{name: "xpcall of a Go function", body: `local ok, v = xpcall(shield.now, print) return { ok, type(v) }`, want: `[true,"number"]`},
		{name: "json decode of bad JSON", body: `return shield.json.decode("{")`, want: "client_rpc.handler_failed"},
		{name: "json decode error is catchable", body: `local ok = pcall(shield.json.decode, "{") return ok`, want: `false`},
		{name: "json big integers are strings", body: `local v = shield.json.decode("[9007199254740993, 9007199254740992]") return { type(v[1]), type(v[2]) }`, want: `["string","number"]`},
		{name: "null", body: `local v = shield.json.decode('{"a":null}')
		                       return { same = v.a == shield.null, str = tostring(shield.null), enc = shield.json.encode({ a = shield.null }) }`,
			want: `{"enc":"{\"a\":null}","same":true,"str":"null"}`},
		{name: "null is not nil", body: `return { shield.null ~= nil, not not shield.null }`, want: `[true,true]`},
		{name: "array", body: `return { shield.json.encode(shield.array({})), shield.json.encode({}), shield.json.encode(shield.array()), shield.json.encode(shield.array({ 1, 2 })) }`,
			want: `["[]","{}","[]","[1,2]"]`},
		{name: "array returns its table", body: `local t = {} return shield.array(t) == t`, want: `true`},
		{name: "array of a table with a metatable", body: `return shield.array(setmetatable({}, {}))`, want: "client_rpc.handler_failed"},
		{name: "a decoded array stays an array", body: `local v = shield.json.decode("[]") return { shield.json.encode(v), getmetatable(v) }`, want: `["[]","shield.array"]`},
		{name: "an empty response array", body: `return shield.array({})`, want: `[]`},
		{name: "client fields", body: `return client`,
			want: `{"epoch":3,"gateway":"gw-test","remote_addr":"10.0.0.1:5555","request_id":REQ,"route":"r%d","route_id":%d,"session_id":7}`},
		{name: "client player_id is nil before bind", body: `return { absent = client.player_id == nil }`, want: `{"absent":true}`},
		{name: "client.ref", body: `return shield.client.ref(client)`, want: `{"epoch":3,"gateway":"gw-test","session_id":7}`},
		{name: "client.ref of a non-client", body: `return shield.client.ref({})`, want: "client_rpc.handler_failed"},
		// A successful bind makes the session's old epoch stale in this VM
		// (SPEC §4), so it binds another session than the one every case
		// here comes from.
		{name: "client.bind", body: `local other = shield.client.ref(client) other.session_id = 8
			local ref = shield.client.bind(other, "p1", "b") return ref`, want: `{"epoch":4,"gateway":"gw-test","player_id":"p1","session_id":8}`},
		{name: "client.bind with a stale epoch", body: `return shield.client.bind(client, "stale", "b")`, want: "client_rpc.epoch_expired"},
		{name: "client.bind error is catchable", body: `local ok, e = pcall(shield.client.bind, client, "stale", "b") return e.code`, want: `"client_rpc.epoch_expired"`},
		{name: "client.bind with an empty player", body: `return shield.client.bind(client, "", "b")`, want: "client_rpc.handler_failed"},
		{name: "client.kick", body: `return shield.client.kick(shield.client.ref(client), "cheating")`, want: `true`},
		{name: "client.kick of a gone session", body: `local ref = shield.client.ref(client) ref.session_id = 404
		                                               local ok, code = shield.client.kick(ref) return { ok = ok == nil, code = code }`,
			want: `{"code":"client_rpc.session_not_found","ok":true}`},
		{name: "push to one target", body: `return shield.client_rpc.push_a(client, { hello = "one" })`, want: `true`},
		{name: "push to one rejected target", body: `local ref = shield.client.ref(client) ref.session_id = 13
		                                             local ok, code = shield.client_rpc.push_a(ref, { x = 1 }) return { ok = ok == nil, code = code }`,
			want: `{"code":"client_rpc.queue_full","ok":true}`},
		{name: "push to an array", body: `local r1 = shield.client.ref(client)
		                                  local r2 = shield.client.ref(client) r2.session_id = 13
		                                  local r3 = shield.client.ref(client) r3.session_id = 14
		                                  local n, bad = shield.client_rpc.push_a({ r1, r2, client, r3 }, { hello = "many" })
		                                  return { n = n, bad = bad }`,
			want: `{"bad":{"2":"client_rpc.queue_full","4":"client_rpc.epoch_expired"},"n":2}`},
		{name: "push to an array, all accepted", body: `local n, bad = shield.client_rpc.push_a({ client, client }, shield.array({})) return { n = n, bad = shield.json.encode(bad) }`,
			want: `{"bad":"{}","n":2}`},
		{name: "push to an empty array", body: `local n, bad = shield.client_rpc.push_a({}, {}) return { n = n, bad = shield.json.encode(bad) }`, want: `{"bad":"{}","n":0}`},
		{name: "push with a body that does not encode", body: `return shield.client_rpc.push_a(client, { f = print })`, want: "client_rpc.handler_failed"},
		{name: "push to a non-client", body: `return shield.client_rpc.push_a({ 1, 2 }, {})`, want: "client_rpc.handler_failed"},
		{name: "a bidi route is a handler and a helper", body: `return shield.client_rpc.both(client, "b")`, want: `true`},
		{name: "helpers are only the owner's", body: `local ok, err = pcall(shield.client_rpc.push_b, client, {})
			return { own = shield.client_rpc.push_a ~= nil, other = not ok and err:find('service "b"', 1, true) ~= nil, none = shield.client_rpc.nope == nil, inb = shield.call("b", "has") }`,
			want: `{"inb":true,"none":true,"other":true,"own":true}`},
	}
	a, aScript := caseActor("a", "", `function M.both(ctx, client, req) return "bidi" end`, cases)
	a += "      - {id: 200, binding: push_a, direction: s2c}\n" +
		"      - {id: 201, binding: push_b, direction: s2c, owner_service: b}\n" +
		"      - {id: 202, binding: both, direction: bidi}\n"
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", "")),
		"a.lua":       aScript,
		"b.lua": `local M = {}
function M.has(ctx) return shield.client_rpc.push_b ~= nil and not pcall(shield.client_rpc.push_a, {}, {}) end
return M`,
	})
	w.Gateway.RejectN[13] = codes.QueueFull
	w.Gateway.RejectN[14] = codes.EpochExpired
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := w.Send(t, "a", uint32(i+1), "{}")
			want := c.want
			if c.name == "client fields" {
				want = fmt.Sprintf(want, i+1, i+1)
				want = strings.ReplaceAll(want, "REQ", fmt.Sprint(id))
			}
			luatest.Expect(t, w.Await(t, id), want, c.msg)
		})
	}
	luatest.Expect(t, w.Ask(t, "a", 202, "{}"), `"bidi"`, "")

	// The log fields, with service and instance.
	recs := w.Logs.Records("api log")
	if len(recs) != 1 {
		t.Fatalf("%d api log records", len(recs))
	}
	want := map[string]any{"service": "a", "instance": 0.0, "n": 3.0, "f": 1.5, "s": "x", "b": true, "t": map[string]any{"k": []any{1.0, 2.0}}, "level": "INFO"}
	for k, v := range want {
		if !reflect.DeepEqual(recs[0][k], v) {
			t.Fatalf("log field %s = %#v, want %#v (record %v)", k, recs[0][k], v, recs[0])
		}
	}
	levels := map[any]bool{}
	for _, r := range w.Logs.Records("lvl") {
		levels[r["level"]] = true
	}
	if len(levels) != 3 {
		t.Fatalf("levels logged: %v", levels)
	}
	if odd := w.Logs.Records("odd"); len(odd) != 1 || odd[0]["!BADKEY"] != "k" {
		t.Fatalf("odd log: %v", odd)
	}

	// What the gateway saw.
	w.Gateway.Mu.Lock()
	defer w.Gateway.Mu.Unlock()
	if len(w.Gateway.Binds) != 3 { // p1 and two stale ones
		t.Fatalf("%d binds", len(w.Gateway.Binds))
	}
	wantBind := egress.BindRequest{Ref: egress.ClientRef{SessionID: 8, Epoch: 3, Gateway: "gw-test"}, PlayerID: "p1", Target: egress.ActorID{Service: "b"}, Caller: egress.ActorID{Service: "a"}}
	if got := *w.Gateway.Binds[0]; !reflect.DeepEqual(got, wantBind) {
		t.Fatalf("bind %+v, want %+v", got, wantBind)
	}
	if len(w.Gateway.Kicks) != 1 || w.Gateway.Kicks[0].Reason != "cheating" || w.Gateway.Kicks[0].Ref.SessionID != 7 {
		t.Fatalf("kicks %+v", w.Gateway.Kicks)
	}
	var many *egress.Push
	for _, p := range w.Gateway.Pushes {
		if string(p.Bodies["json"]) == `{"hello":"many"}` {
			many = p
		}
	}
	if many == nil || many.RouteID != 200 || len(many.Targets) != 4 || many.Targets[2] != (egress.ClientRef{SessionID: 7, Epoch: 3, Gateway: "gw-test"}) {
		t.Fatalf("push to many: %+v", many)
	}
}

// TestClientTable checks the client argument for a bound session and for
// ids beyond 2^53.
func TestClientTable(t *testing.T) {
	cases := []luaCase{{name: "client", body: `return { client.player_id, client.request_id, client.session_id, client.epoch, type(client.request_id) }`}}
	a, aScript := caseActor("a", "", "", cases)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	for _, tc := range []struct {
		req, sess, epoch uint64
		want             string
	}{
		{1 << 53, 1, 2, fmt.Sprintf(`["p9",%d,1,2,"number"]`, uint64(1<<53))},
		{1<<53 + 1, 1<<64 - 1, 1<<53 + 5, `["p9","9007199254740993","18446744073709551615","9007199254740997","string"]`},
	} {
		c := luatest.Client(tc.req, 1)
		c.Ref.PlayerID, c.Ref.SessionID, c.Ref.Epoch = "p9", tc.sess, tc.epoch
		w.Deliver(t, "a", &ingress.ClientIngress{Client: c, Body: []byte("{}"), Codec: "json"})
		luatest.Expect(t, w.Await(t, tc.req), tc.want, "")
	}
}
