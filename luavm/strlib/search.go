package strlib

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// This file holds the four functions that run the matcher: find, match,
// gmatch and gsub, each following lstrlib.c's str_find_aux, gmatch_aux and
// str_gsub. Each call of find, match or gsub, and each step of a gmatch
// iterator, gets its own step budget: between two such calls the VM runs
// an instruction and checks the context itself.

// find is string.find(s, pattern [, init [, plain]]).
func (lib *library) find(L *lua.LState) int {
	return lib.findAux(L, true, "string.find")
}

// match is string.match(s, pattern [, init]). No match returns one nil
// (gopher-lua returned no value at all).
func (lib *library) match(L *lua.LState) int {
	return lib.findAux(L, false, "string.match")
}

func (lib *library) findAux(L *lua.LState, find bool, fn string) int {
	s := L.CheckString(1)
	pat := L.CheckString(2)
	init := posrelat(optInt(L, 3, 1), len(s)) - 1
	init = min(max(init, 0), len(s))

	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(pat, specials)) {
		// A plain search is linear, so it needs no budget.
		if i := strings.Index(s[init:], pat); i >= 0 {
			L.Push(lua.LNumber(init + i + 1))
			L.Push(lua.LNumber(init + i + len(pat)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}

	m := lib.newMatcher(L, fn, s, pat)
	p, anchor := 0, strings.HasPrefix(pat, "^")
	if anchor {
		p = 1
	}
	for s1 := init; ; s1++ {
		m.reset()
		if e := m.match(s1, p); e >= 0 {
			if find {
				L.Push(lua.LNumber(s1 + 1))
				L.Push(lua.LNumber(e))
				return m.pushCaptures(s1, e, false) + 2
			}
			return m.pushCaptures(s1, e, true)
		}
		if anchor || s1 >= len(s) {
			break
		}
	}
	L.Push(lua.LNil)
	return 1
}

// gmatch is string.gmatch(s, pattern): an iterator over the matches. It
// matches lazily, one match per call, where gopher-lua computed every match
// up front. As in Lua 5.1, a leading '^' is not an anchor here (it would
// stop the iteration) but a literal '^'.
func (lib *library) gmatch(L *lua.LState) int {
	s := L.CheckString(1)
	pat := L.CheckString(2)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		m := lib.newMatcher(L, "string.gmatch", s, pat)
		for src := pos; src <= len(s); src++ {
			m.reset()
			if e := m.match(src, 0); e >= 0 {
				pos = e
				if e == src { // an empty match: move on at least one byte
					pos++
				}
				return m.pushCaptures(src, e, true)
			}
		}
		return 0
	}))
	return 1
}

// gsub is string.gsub(s, pattern, repl [, n]). The result grows in a
// bounded buffer, so a substitution that would pass MaxStringBytes raises
// as soon as it would, having held at most the cap.
func (lib *library) gsub(L *lua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	repl := L.Get(3)
	maxN := optInt(L, 4, len(src)+1)
	switch repl.Type() {
	case lua.LTNumber, lua.LTString, lua.LTTable, lua.LTFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}

	p, anchor := 0, strings.HasPrefix(pat, "^")
	if anchor {
		p = 1
	}
	m := lib.newMatcher(L, "string.gsub", src, pat)
	b := lib.newBuffer(L, "string.gsub", len(src))
	s, n := 0, 0
scan:
	for n < maxN {
		m.reset()
		e := m.match(s, p)
		if e >= 0 {
			n++
			lib.addValue(m, b, repl, s, e)
		}
		switch {
		case e > s: // a non-empty match: go on after it
			s = e
		case s < len(src):
			b.addByte(src[s])
			s++
		default:
			break scan // the subject is used up
		}
		if anchor {
			break
		}
	}
	b.addString(src[s:])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(n))
	return 2
}

// addValue appends the replacement of the match src[s:e] (add_value).
func (lib *library) addValue(m *matcher, b *buffer, repl lua.LValue, s, e int) {
	L := m.L
	var v lua.LValue
	switch r := repl.(type) {
	case *lua.LTable:
		v = L.GetTable(r, m.captureValue(0, s, e))
	case *lua.LFunction:
		// L.Call as gopher-lua's gsub does; the function runs on the VM,
		// which checks the context between its instructions.
		L.Push(r)
		L.Call(m.pushCaptures(s, e, true), 1)
		v = L.Get(-1)
		L.Pop(1)
	default: // a string, or a number used as one
		addString(m, b, lua.LVAsString(repl), s, e)
		return
	}
	switch v.(type) {
	case lua.LString, lua.LNumber:
		b.addString(lua.LVAsString(v))
	default:
		if lua.LVAsBool(v) {
			L.RaiseError("invalid replacement value (a %s)", v.Type().String())
		}
		b.addString(m.src[s:e]) // nil or false keeps the original text
	}
}

// addString expands a replacement string (add_s): %0 is the whole match,
// %1-%9 a capture, and % before any other byte stands for that byte, so
// "%%" is "%". A lone '%' at the end is kept as '%' (Lua 5.1 read the
// string's terminating NUL there and inserted a zero byte).
//
// Each escape costs a match step: "%1" of an empty capture adds nothing to
// the result, so a replacement of thousands of them at every position of a
// long subject would otherwise be unbounded work that the size cap never
// sees.
func addString(m *matcher, b *buffer, news string, s, e int) {
	for len(news) > 0 {
		m.step(1)
		i := strings.IndexByte(news, '%')
		if i < 0 || i == len(news)-1 {
			b.addString(news)
			return
		}
		b.addString(news[:i])
		switch c := news[i+1]; {
		case c == '0':
			b.addString(m.src[s:e])
		case isDigit(c):
			b.addString(lua.LVAsString(m.captureValue(int(c-'1'), s, e)))
		default:
			b.addByte(c)
		}
		news = news[i+2:]
	}
}
