package kv_test

import (
	"strings"
	"testing"
)

// kvPrelude helps the cases: pack keeps a call's results with their count.
const kvPrelude = `
local kv = shield.kv
local function pack(...) return { n = select("#", ...), ... } end
`

// TestKV covers every shield.kv function and every error path of SPEC §11
// that a script meets, on a real embedded JetStream.
func TestKV(t *testing.T) {
	long := strings.Repeat("k", 255)
	cases := []luaCase{
		// get and put
		{name: "put returns a positive revision that get returns with the value",
			body: `local r = kv.put("b", "p1", { x = 1 })
			       local v, r2 = kv.get("b", "p1")
			       return { pos = r > 0, same = r == r2, v = v }`,
			want: `{"pos":true,"same":true,"v":{"x":1}}`},
		{name: "every write of a bucket gets a larger revision",
			body: `local r1 = kv.put("b", "seq1", 1)
			       local r2 = kv.put("b", "seq2", 1)
			       local r3 = kv.put("b", "seq1", 2)
			       local r4 = kv.create("b", "seq3", 1)
			       local r5 = kv.update("b", "seq3", 2, r4)
			       return r1 < r2 and r2 < r3 and r3 < r4 and r4 < r5`,
			want: `true`},
		{name: "get of an absent key is one nil", body: `local p = pack(kv.get("b", "nobody")) return { n = p.n, none = p[1] == nil }`, want: `{"n":1,"none":true}`},
		{name: "put overwrites", body: `kv.put("b", "ow", "a") kv.put("b", "ow", "b") return (kv.get("b", "ow"))`, want: `"b"`},
		{name: "a stored null comes back as shield.null",
			body: `kv.put("b", "nul", shield.null) local v, r = kv.get("b", "nul") return { null = v == shield.null, r = r > 0 }`,
			want: `{"null":true,"r":true}`},
		{name: "tables round trip under the JSON mapping",
			body: `local v = { list = { 1, 2.5, "x", true, false, shield.null }, obj = { a = { b = shield.array() } },
			                     empty = {}, s = "é\"\n<&>", neg = -3, big = "9007199254740993" }
			       kv.put("b", "map", v)
			       local got = kv.get("b", "map")
			       return { same = shield.json.encode(got) == shield.json.encode(v), empty = shield.json.encode(got.obj.a.b), got = got }`,
			want: `{"empty":"[]","got":{"big":"9007199254740993","empty":{},"list":[1,2.5,"x",true,false,null],"neg":-3,"obj":{"a":{"b":[]}},"s":"é\"\n<&>"},"same":true}`},
		{name: "scalars round trip",
			body: `local out = {}
			       for i, v in ipairs({ "s", 42, 0.5, true, false, "" }) do kv.put("b", "scalar" .. i, v) out[i] = kv.get("b", "scalar" .. i) end
			       return out`,
			want: `["s",42,0.5,true,false,""]`},
		{name: "a decoded array stays an array", body: `kv.put("b", "arr", shield.array()) return shield.json.encode((kv.get("b", "arr")))`, want: `"[]"`},
		{name: "put of nil is an error naming delete",
			body: `local ok, e = pcall(kv.put, "b", "nilv", nil) return { ok = ok, plain = type(e) == "string", delete = e:find("delete", 1, true) ~= nil }`,
			want: `{"delete":true,"ok":false,"plain":true}`},
		{name: "put of a function is a plain error", body: `return kv.put("b", "fn", { f = print })`, want: "client_rpc.handler_failed"},
		{name: "put of invalid UTF-8 is a plain error", body: `return kv.put("b", "utf", "\255")`, want: "client_rpc.handler_failed"},

		// create, update, delete
		{name: "create stores an absent key and refuses a present one",
			body: `local r = kv.create("b", "cr", "one")
			       local p = pack(kv.create("b", "cr", "two"))
			       return { r = r > 0, n = p.n, none = p[1] == nil, why = p[2], v = kv.get("b", "cr") }`,
			want: `{"n":2,"none":true,"r":true,"v":"one","why":"exists"}`},
		{name: "update with the current revision writes",
			body: `local r = kv.put("b", "up", 1)
			       local r2 = kv.update("b", "up", 2, r)
			       local v, r3 = kv.get("b", "up")
			       return { newer = r2 > r, v = v, same = r2 == r3 }`,
			want: `{"newer":true,"same":true,"v":2}`},
		{name: "update with an old revision conflicts and writes nothing",
			body: `local r = kv.put("b", "upc", 1)
			       kv.put("b", "upc", 2)
			       local p = pack(kv.update("b", "upc", 3, r))
			       return { none = p[1] == nil, why = p[2], v = kv.get("b", "upc") }`,
			want: `{"none":true,"v":2,"why":"conflict"}`},
		{name: "update of an absent key conflicts",
			body: `local p = pack(kv.update("b", "upa", 1, 1)) return { none = p[1] == nil, why = p[2], v = kv.get("b", "upa") == nil }`,
			want: `{"none":true,"v":true,"why":"conflict"}`},
		{name: "update with another key's revision conflicts",
			body: `local r = kv.put("b", "other1", 1) kv.put("b", "other2", 1)
			       local _, why = kv.update("b", "other2", 2, r) return why`,
			want: `"conflict"`},
		{name: "two updates from one revision: only the first wins",
			body: `local r = kv.put("b", "race", 0)
			       local a = kv.update("b", "race", "a", r)
			       local b, why = kv.update("b", "race", "b", r)
			       return { a = a ~= nil, b = b == nil, why = why, v = kv.get("b", "race") }`,
			want: `{"a":true,"b":true,"v":"a","why":"conflict"}`},
		{name: "a revision must be a positive integer",
			body: `local out = {}
			       for _, r in ipairs({ 0, -1, 1.5, "x" }) do out[#out + 1] = (pcall(kv.update, "b", "rev", 1, r)) end
			       out[#out + 1] = (pcall(kv.update, "b", "rev", 1))
			       return out`,
			want: `[false,false,false,false,false]`},
		{name: "delete returns true and removes the key",
			body: `kv.put("b", "del", 1) local ok = kv.delete("b", "del") return { ok = ok, gone = kv.get("b", "del") == nil }`,
			want: `{"gone":true,"ok":true}`},
		{name: "delete of an absent key returns true", body: `return kv.delete("b", "never")`, want: `true`},
		{name: "create works again after delete, update does not",
			body: `local r = kv.create("b", "again", 1)
			       kv.delete("b", "again")
			       local _, why = kv.update("b", "again", 2, r)
			       local r2 = kv.create("b", "again", 3)
			       return { why = why, newer = r2 > r, v = kv.get("b", "again") }`,
			want: `{"newer":true,"v":3,"why":"conflict"}`},
		{name: "update cannot target a deleted key by guessing its next revision",
			body: `local r = kv.put("b", "guess", 1)
			       kv.delete("b", "guess")
			       local out = {}
			       for i = 0, 3 do local _, why = kv.update("b", "guess", 2, r + i) out[#out + 1] = why end
			       return { out = out, gone = kv.get("b", "guess") == nil }`,
			want: `{"gone":true,"out":["conflict","conflict","conflict","conflict"]}`},

		// keys
		{name: "keys are sorted and filtered by a plain prefix",
			body: `for _, k in ipairs({ "ks.b", "ks.a", "ks.c/1", "ks.aa", "kt.x", "ks" }) do kv.put("b", k, 1) end
			       return { kv.keys("b", "ks."), kv.keys("b", "ks.a"), kv.keys("b", "kt"), kv.keys("b", "ks.c/") }`,
			want: `[["ks.a","ks.aa","ks.b","ks.c/1"],["ks.a","ks.aa"],["kt.x"],["ks.c/1"]]`},
		{name: "keys without a prefix lists every key, nil or empty",
			body: `local all, all2 = kv.keys("e"), kv.keys("e", "")
			       kv.put("e", "z", 1) kv.put("e", "a.b", 1)
			       return { shield.json.encode(all), kv.keys("e"), kv.keys("e", "") }`,
			want: `["[]",["a.b","z"],["a.b","z"]]`},
		{name: "keys leaves deleted keys out", body: `kv.put("b", "kd.1", 1) kv.put("b", "kd.2", 1) kv.delete("b", "kd.1") return kv.keys("b", "kd.")`, want: `["kd.2"]`},
		{name: "keys with a prefix no key can have is empty",
			body: `return { shield.json.encode(kv.keys("b", "ks..")), shield.json.encode(kv.keys("b", "*")), shield.json.encode(kv.keys("b", "ks.>")) }`,
			want: `["[]","[]","[]"]`},
		{name: "keys needs a string prefix", body: `return kv.keys("b", 3)`, want: "client_rpc.handler_failed"},

		// keys and buckets that are wrong
		{name: "bad keys raise a plain error naming them",
			body: `local out = {}
			       for _, k in ipairs({ "", ".a", "a.", "a..b", "a b", "a*", "a>", "é", "` + long + `k" }) do
			         local ok, e = pcall(kv.get, "b", k)
			         out[#out + 1] = (not ok) and type(e) == "string" and e:find(string.format("%q", k):sub(1, 20), 1, true) ~= nil
			       end
			       return out`,
			want: `[true,true,true,true,true,true,true,true,true]`},
		{name: "a 255-character key and every allowed character work",
			body: `kv.put("b", "` + long + `", 1) kv.put("b", "Az09_-=./x", 2) return { (kv.get("b", "` + long + `")), (kv.get("b", "Az09_-=./x")) }`,
			want: `[1,2]`},
		{name: "every function checks its key",
			body: `local out = {}
			       for _, f in ipairs({ function() return kv.put("b", "a b", 1) end, function() return kv.create("b", "a b", 1) end,
			                            function() return kv.update("b", "a b", 1, 1) end, function() return kv.delete("b", "a b") end }) do
			         local ok, e = pcall(f) out[#out + 1] = (not ok) and e:find('"a b"', 1, true) ~= nil
			       end
			       return out`,
			want: `[true,true,true,true]`},
		{name: "an unknown bucket raises a plain error naming it",
			body: `local out = {}
			       for _, f in ipairs({ kv.get, kv.put, kv.create, kv.update, kv.delete, kv.keys }) do
			         local ok, e = pcall(f, "nosuch", "k", 1, 1) out[#out + 1] = (not ok) and type(e) == "string" and e:find('bucket "nosuch" is not in storage.buckets', 1, true) ~= nil
			       end
			       return out`,
			want: `[true,true,true,true,true,true]`},
		{name: "a bad bucket or key escaping is handler_failed", body: `return kv.get("nosuch", "k")`, want: "client_rpc.handler_failed"},

		// size caps: bucket small has max_value_bytes 10
		{name: "a value of exactly max_value_bytes is stored", body: `kv.put("small", "exact", "12345678") return (kv.get("small", "exact"))`, want: `"12345678"`},
		{name: "values are stored as compact JSON", body: `kv.put("small", "compact", { a = 1, b = 2 }) return (kv.get("small", "compact"))`,
			want: "client_rpc.resource_exhausted"},
		{name: "put over max_value_bytes raises and stores nothing",
			body: `kv.put("small", "over", 1)
			       local ok, e = pcall(kv.put, "small", "over", "123456789")
			       return { ok = ok, code = e.code, v = kv.get("small", "over"), msg = e.message }`,
			want: `{"code":"client_rpc.resource_exhausted","msg":"shield.kv.put: the value is 11 bytes of JSON, over the max_value_bytes of bucket small (10)","ok":false,"v":1}`},
		{name: "create over max_value_bytes raises and stores nothing",
			body: `local ok, e = pcall(kv.create, "small", "cover", "123456789") return { ok = ok, code = e.code, v = kv.get("small", "cover") == nil }`,
			want: `{"code":"client_rpc.resource_exhausted","ok":false,"v":true}`},
		{name: "update over max_value_bytes raises and stores nothing",
			body: `local r = kv.put("small", "uover", 1)
			       local ok, e = pcall(kv.update, "small", "uover", "123456789", r)
			       local v, r2 = kv.get("small", "uover")
			       return { ok = ok, code = e.code, v = v, same = r == r2 }`,
			want: `{"code":"client_rpc.resource_exhausted","ok":false,"same":true,"v":1}`},
		{name: "a value over lua.max_string_bytes raises while encoding",
			body: `return kv.put("small", "huge", string.rep("x", 600000) .. string.rep("y", 600000))`,
			want: "client_rpc.resource_exhausted"},

		// suspension
		{name: "pcall around every function",
			body: `local out = {}
			       out[1] = select(2, pcall(kv.put, "b", "pc", 1)) > 0
			       out[2] = select(2, pcall(kv.get, "b", "pc"))
			       out[3] = select(3, pcall(kv.create, "b", "pc", 1))
			       out[4] = select(3, pcall(kv.update, "b", "pc", 1, 1))
			       out[5] = select(2, pcall(kv.delete, "b", "pc"))
			       out[6] = #select(2, pcall(kv.keys, "b", "pc"))
			       return out`,
			want: `[true,1,"exists","conflict",true,0]`},
		{name: "inside coroutine.wrap", body: `return coroutine.wrap(function() kv.put("b", "co", "in") return (kv.get("b", "co")) end)()`, want: `"in"`},
		{name: "nested pcalls around kv calls",
			body: `local ok, v = pcall(function() local ok2, r = pcall(kv.put, "b", "nest", 5) return kv.get("b", "nest") + (ok2 and 1 or 0) end)
			       return { ok, v }`,
			want: `[true,6]`},
	}
	w := caseWorld(t, storageYAML("", "{name: b}", "{name: e}", "{name: small, max_value_bytes: 10}")+"lua: {max_string_bytes: 1000000}\n",
		"", kvPrelude, cases)
	runCases(t, w, cases)
}
