package luavm

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// shield.crypto and shield.base64 (SPEC §11): Go's own primitives over Lua
// strings, which hold any bytes. None of them suspends or needs a running
// task, so a script's top level may use them too.

// maxRandomBytes bounds shield.crypto.random: enough for any key or nonce,
// small enough that a loop of calls cannot drain the entropy pool.
const maxRandomBytes = 1024

// cryptoFuncs are shield.crypto's functions.
var cryptoFuncs = map[string]lua.LGFunction{
	"sha256":      luaSHA256,
	"hmac_sha256": luaHMACSHA256,
	"random":      luaRandom,
	"equal":       luaEqual,
}

// base64Funcs are shield.base64's functions.
var base64Funcs = map[string]lua.LGFunction{
	"encode": luaBase64Encode,
	"decode": luaBase64Decode,
}

// installCrypto adds shield.crypto and shield.base64 to the shield table.
func (vm *VM) installCrypto(sh *lua.LTable) {
	sh.RawSetString("crypto", vm.l.SetFuncs(vm.l.NewTable(), cryptoFuncs))
	sh.RawSetString("base64", vm.l.SetFuncs(vm.l.NewTable(), base64Funcs))
}

// shield.crypto.sha256(s) -> the digest as 64 lowercase hex digits.
func luaSHA256(L *lua.LState) int {
	sum := sha256.Sum256([]byte(L.CheckString(1)))
	L.Push(lua.LString(hex.EncodeToString(sum[:])))
	return 1
}

// shield.crypto.hmac_sha256(key, s) -> the MAC as 64 lowercase hex digits.
func luaHMACSHA256(L *lua.LState) int {
	mac := hmac.New(sha256.New, []byte(L.CheckString(1)))
	mac.Write([]byte(L.CheckString(2)))
	L.Push(lua.LString(hex.EncodeToString(mac.Sum(nil))))
	return 1
}

// shield.crypto.random(n) -> n bytes from the operating system's CSPRNG.
// An n outside 1..1024, or not an integer, is misuse: a plain error.
func luaRandom(L *lua.LState) int {
	n := L.CheckNumber(1)
	if n < 1 || n > maxRandomBytes || n != lua.LNumber(int(n)) {
		L.ArgError(1, "shield.crypto.random: n must be an integer from 1 to 1024, got "+n.String())
	}
	b := make([]byte, int(n))
	// crypto/rand.Read never fails on the platforms Go supports (it
	// crashes the program instead of returning short).
	_, _ = rand.Read(b)
	L.Push(lua.LString(b))
	return 1
}

// shield.crypto.equal(a, b) -> whether the strings are equal, in time that
// depends on their lengths only: for comparing MACs and tokens.
func luaEqual(L *lua.LState) int {
	a, b := L.CheckString(1), L.CheckString(2)
	L.Push(lua.LBool(subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1))
	return 1
}

// shield.base64.encode(s) -> standard base64 with padding.
func luaBase64Encode(L *lua.LState) int {
	L.Push(lua.LString(base64.StdEncoding.EncodeToString([]byte(L.CheckString(1)))))
	return 1
}

// strictBase64 rejects non-zero padding bits, so that every byte string
// has exactly one accepted encoding.
var strictBase64 = base64.StdEncoding.Strict()

// shield.base64.decode(s) -> the bytes, or nil, "invalid". Go's decoder
// skips \r and \n; SPEC §11 allows no whitespace, so they are refused here.
func luaBase64Decode(L *lua.LState) int {
	s := L.CheckString(1)
	b, err := strictBase64.DecodeString(s)
	if err != nil || strings.ContainsAny(s, "\r\n") {
		L.Push(lua.LNil)
		L.Push(lua.LString("invalid"))
		return 2
	}
	L.Push(lua.LString(b))
	return 1
}
