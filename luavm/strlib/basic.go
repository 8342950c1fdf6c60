package strlib

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// This file holds the functions that do not match patterns. Only rep and
// char can build a string longer than their arguments; upper, lower and
// reverse return as many bytes as they get, so they need no size check.

// len is string.len.
func (lib *library) len(L *lua.LState) int {
	L.Push(lua.LNumber(len(L.CheckString(1))))
	return 1
}

// sub is string.sub, with lstrlib.c's clamping of out-of-range positions.
func (lib *library) sub(L *lua.LState) int {
	s := L.CheckString(1)
	start := posrelat(checkInt(L, 2), len(s))
	end := posrelat(optInt(L, 3, -1), len(s))
	start = max(start, 1)
	end = min(end, len(s))
	if start > end {
		L.Push(lua.LString(""))
	} else {
		L.Push(lua.LString(s[start-1 : end]))
	}
	return 1
}

// byte is string.byte. Unlike gopher-lua's, byte(s) returns only the first
// byte: j defaults to i, as in Lua 5.1.
func (lib *library) byte(L *lua.LState) int {
	s := L.CheckString(1)
	posi := posrelat(optInt(L, 2, 1), len(s))
	pose := posrelat(optInt(L, 3, posi), len(s))
	posi = max(posi, 1)
	pose = min(pose, len(s))
	if posi > pose {
		return 0
	}
	n := pose - posi + 1
	if n > maxByteResults {
		L.RaiseError("string slice too long")
	}
	for i := posi - 1; i < pose; i++ {
		L.Push(lua.LNumber(s[i]))
	}
	return n
}

// char is string.char. A value outside 0..255 is an error, as in Lua 5.1
// (gopher-lua silently keeps the low byte).
func (lib *library) char(L *lua.LState) int {
	n := L.GetTop()
	if n > lib.maxBytes {
		lib.tooLong(L, "string.char", float64(n))
	}
	buf := make([]byte, n)
	for i := 1; i <= n; i++ {
		c := checkInt(L, i)
		if c < 0 || c > 255 {
			L.ArgError(i, "invalid value")
		}
		buf[i-1] = byte(c)
	}
	L.Push(lua.LString(bytesToString(buf)))
	return 1
}

// rep is string.rep(s, n [, sep]). The separator is Lua 5.2's; Lua 5.1
// code never passes a third argument, so accepting it changes nothing for
// it. The size is computed in float64 first so that n = 2^40 cannot
// overflow into a small number before the check.
func (lib *library) rep(L *lua.LState) int {
	s := L.CheckString(1)
	n := checkInt(L, 2)
	sep := ""
	if L.Get(3) != lua.LNil {
		sep = L.CheckString(3)
	}
	if n <= 0 || len(s)+len(sep) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	total := float64(n)*float64(len(s)) + float64(n-1)*float64(len(sep))
	if total > float64(lib.maxBytes) {
		lib.tooLong(L, "string.rep", total)
	}
	if sep == "" {
		L.Push(lua.LString(strings.Repeat(s, n)))
		return 1
	}
	buf := make([]byte, 0, int(total))
	for i := 0; i < n; i++ {
		if i > 0 {
			buf = append(buf, sep...)
		}
		buf = append(buf, s...)
	}
	L.Push(lua.LString(bytesToString(buf)))
	return 1
}

// reverse is string.reverse, byte by byte as in Lua.
func (lib *library) reverse(L *lua.LState) int {
	s := L.CheckString(1)
	buf := make([]byte, len(s))
	for i := range len(s) {
		buf[len(s)-1-i] = s[i]
	}
	L.Push(lua.LString(bytesToString(buf)))
	return 1
}

// lower is string.lower in the C locale: ASCII letters only, one byte for
// one byte. gopher-lua used strings.ToLower, which maps Unicode letters and
// turns each invalid UTF-8 byte into a 3-byte U+FFFD, so its result could
// be three times longer than its input.
func (lib *library) lower(L *lua.LState) int {
	L.Push(lua.LString(flipCase(L.CheckString(1), 'A', 'Z')))
	return 1
}

// upper is string.upper in the C locale; see lower.
func (lib *library) upper(L *lua.LState) int {
	L.Push(lua.LString(flipCase(L.CheckString(1), 'a', 'z')))
	return 1
}

// flipCase switches the case of every ASCII letter of s in lo..hi (upper
// and lower case differ by bit 0x20). It returns s itself when nothing
// changes, which is common (lowering an identifier) and saves the copy.
func flipCase(s string, lo, hi byte) string {
	i := 0
	for i < len(s) && (s[i] < lo || s[i] > hi) {
		i++
	}
	if i == len(s) {
		return s
	}
	buf := []byte(s)
	for ; i < len(buf); i++ {
		if c := buf[i]; c >= lo && c <= hi {
			buf[i] = c ^ 0x20
		}
	}
	return bytesToString(buf)
}
