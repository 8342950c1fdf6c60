package luavm_test

import (
	"testing"

	"github.com/shieldrpc/shield/internal/luatest"
)

// hexPrelude gives the cases a way to write binary keys and data.
const hexPrelude = `
local function unhex(h) return (h:gsub("..", function(b) return string.char(tonumber(b, 16)) end)) end
local function rep(byte, n) return string.rep(string.char(byte), n) end
`

// TestCrypto checks shield.crypto and shield.base64 against known vectors:
// FIPS 180-2's SHA-256 of "" and "abc", RFC 4231's HMAC-SHA-256 cases 1-4
// and 6-7 (case 5 is a truncated MAC), and RFC 4648's base64 vectors.
func TestCrypto(t *testing.T) {
	cases := []luaCase{
		{name: "sha256 of the empty string", body: `return shield.crypto.sha256("")`,
			want: `"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`},
		{name: "sha256 of abc", body: `return shield.crypto.sha256("abc")`,
			want: `"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`},
		{name: "sha256 needs a string", body: `return shield.crypto.sha256({})`, want: "client_rpc.handler_failed"},
		{name: "rfc4231 case 1", body: `return shield.crypto.hmac_sha256(rep(0x0b, 20), "Hi There")`,
			want: `"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"`},
		{name: "rfc4231 case 2", body: `return shield.crypto.hmac_sha256("Jefe", "what do ya want for nothing?")`,
			want: `"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"`},
		{name: "rfc4231 case 3", body: `return shield.crypto.hmac_sha256(rep(0xaa, 20), rep(0xdd, 50))`,
			want: `"773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"`},
		{name: "rfc4231 case 4", body: `return shield.crypto.hmac_sha256(unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"), rep(0xcd, 50))`,
			want: `"82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"`},
		{name: "rfc4231 case 6", body: `return shield.crypto.hmac_sha256(rep(0xaa, 131), "Test Using Larger Than Block-Size Key - Hash Key First")`,
			want: `"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"`},
		{name: "rfc4231 case 7", body: `return shield.crypto.hmac_sha256(rep(0xaa, 131),
			"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.")`,
			want: `"9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"`},
		{name: "hmac needs a key and a message", body: `return shield.crypto.hmac_sha256("k")`, want: "client_rpc.handler_failed"},
		{name: "random gives n bytes", body: `return { #shield.crypto.random(1), #shield.crypto.random(32), #shield.crypto.random(1024) }`, want: `[1,32,1024]`},
		{name: "random differs between calls", body: `return shield.crypto.random(16) ~= shield.crypto.random(16)`, want: `true`},
		{name: "random of 0 raises", body: `return shield.crypto.random(0)`, want: "client_rpc.handler_failed"},
		{name: "random of 1025 raises", body: `return shield.crypto.random(1025)`, want: "client_rpc.handler_failed"},
		{name: "random of a fraction raises", body: `return shield.crypto.random(1.5)`, want: "client_rpc.handler_failed"},
		{name: "random of a negative number raises", body: `return shield.crypto.random(-1)`, want: "client_rpc.handler_failed"},
		{name: "random's error is a plain string naming the range",
			body: `local ok, e = pcall(shield.crypto.random, 0) return { ok = ok, plain = type(e) == "string", range = e:find("1 to 1024", 1, true) ~= nil }`,
			want: `{"ok":false,"plain":true,"range":true}`},
		{name: "equal", body: `return { shield.crypto.equal("abc", "abc"), shield.crypto.equal("abc", "abd"), shield.crypto.equal("abc", "ab"), shield.crypto.equal("", ""), shield.crypto.equal("\0x", "\0x") }`,
			want: `[true,false,false,true,true]`},
		{name: "equal needs two strings", body: `return shield.crypto.equal("a")`, want: "client_rpc.handler_failed"},
		{name: "base64 rfc4648 vectors", body: `local out = {}
			for _, s in ipairs({ "", "f", "fo", "foo", "foob", "fooba", "foobar" }) do out[#out + 1] = shield.base64.encode(s) end
			return out`, want: `["","Zg==","Zm8=","Zm9v","Zm9vYg==","Zm9vYmE=","Zm9vYmFy"]`},
		{name: "base64 uses the standard alphabet", body: `return shield.base64.encode("\251\255\191")`, want: `"+/+/"`},
		{name: "base64 round trip of every byte", body: `local t = {} for i = 0, 255 do t[#t + 1] = string.char(i) end
			local s = table.concat(t) return shield.base64.decode(shield.base64.encode(s)) == s`, want: `true`},
		{name: "base64 decodes", body: `return { shield.base64.decode("Zm9vYg=="), shield.base64.decode("Zm9vYmFy") }`, want: `["foob","foobar"]`},
		{name: "base64 of the empty string decodes to the empty string", body: `local v, e = shield.base64.decode("") return { v = v, e = e == nil }`, want: `{"e":true,"v":""}`},
		{name: "base64 bad input", body: `local out = {}
			for _, s in ipairs({ "Zg", "Zg=", "Z===", "Zm9v!", "Zm9v\n", "Zm9v\r\nYg==", " Zm9v", "Zh==", "-_8=", "Zg==Zg==" }) do
			  local v, e = shield.base64.decode(s)
			  out[#out + 1] = tostring(v) .. "," .. tostring(e)
			end
			return out`, want: `["nil,invalid","nil,invalid","nil,invalid","nil,invalid","nil,invalid","nil,invalid","nil,invalid","nil,invalid","nil,invalid","nil,invalid"]`},
		{name: "base64 needs a string", body: `return shield.base64.encode()`, want: "client_rpc.handler_failed"},
	}
	a, aScript := caseActor("a", "", hexPrelude, cases)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	runCases(t, w, "a", cases)
}

// TestCryptoAtLoad: the crypto functions need no running message, so a
// script's top level may use them (to derive a key from its settings).
func TestCryptoAtLoad(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "", "\n      - {id: 1, name: r, binding: r}")),
		"a.lua": `local M = {}
local key = shield.crypto.sha256("seed") .. shield.base64.encode(shield.crypto.random(3))
function M.r(ctx, client, req) return #key end
return M`,
	})
	luatest.Expect(t, w.Ask(t, "a", 1, "{}"), "68", "")
}
