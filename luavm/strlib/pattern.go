package strlib

import (
	"context"
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// This file is a port of the pattern matcher of Lua 5.1's lstrlib.c (match,
// max_expand, min_expand, start_capture, end_capture, match_capture,
// matchbalance, matchbracketclass, the %f frontier), with three additions
// that gopher-lua's pm package has no hook for: a step budget, a look at the
// context every few thousand steps, and Lua 5.2's recursion limit. Indices
// replace C pointers; the end of the pattern is len(pat) rather than a NUL,
// so a pattern may contain "\0" (Lua 5.1 would stop reading there).

const (
	// maxCaptures is LUA_MAXCAPTURES.
	maxCaptures = 32
	// maxMatchDepth is Lua 5.2's MAXCCALLS for the matcher: how deeply
	// match may recurse (each capture, repetition or optional item that is
	// not last recurses) before "pattern too complex". Without it, a pattern
	// of many optional items recurses as deep as the Go stack allows.
	maxMatchDepth = 200
	// ctxCheckEvery is how many steps pass between two looks at the context:
	// some 50 µs of matching, so cancellation is seen promptly, and
	// rare enough that the select costs nothing measurable.
	ctxCheckEvery = 4096

	capUnfinished = -1
	capPosition   = -2

	// specials are the bytes that make find use the matcher rather than a
	// plain substring search (lstrlib.c's SPECIALS).
	specials = "^$*+?.([%-"
)

// capture is one capture slot: where it starts in the subject and its
// length, or capUnfinished / capPosition.
type capture struct {
	init, len int
}

// matcher is lstrlib.c's MatchState plus the bookkeeping of the limits.
// One is used for one library call (or one gmatch step) and then dropped.
type matcher struct {
	L     *lua.LState
	lib   *library
	fn    string // the Lua function's name, for errors
	src   string
	pat   string
	level int // captures started (finished or not)
	depth int // current recursion depth of match
	caps  [maxCaptures]capture

	steps     int             // steps taken so far in this call
	nextCheck int             // steps at which checkpoint runs next
	ctx       context.Context // L's context when the call started, or nil
}

func (lib *library) newMatcher(L *lua.LState, fn, src, pat string) *matcher {
	m := &matcher{L: L, lib: lib, fn: fn, src: src, pat: pat, ctx: L.Context()}
	m.nextCheck = min(ctxCheckEvery, lib.maxSteps+1)
	return m
}

// step charges n steps and runs the checkpoint when one is due. It is the
// only cost on the hot path: an add and a compare.
func (m *matcher) step(n int) {
	m.steps += n
	if m.steps >= m.nextCheck {
		m.checkpoint()
	}
}

// checkpoint raises when the budget is spent or the context is done. The
// context error is raised exactly as gopher-lua's VM loop raises it, so the
// runtime sees an ordinary cancellation.
func (m *matcher) checkpoint() {
	if m.steps > m.lib.maxSteps {
		m.lib.exceeded(m.L, fmt.Sprintf("%s: pattern matching took more than max_match_steps (%d)", m.fn, m.lib.maxSteps))
	}
	if m.ctx != nil {
		select {
		case <-m.ctx.Done():
			m.L.RaiseError("%s", m.ctx.Err().Error())
		default:
		}
	}
	m.nextCheck = min(m.steps+ctxCheckEvery, m.lib.maxSteps+1)
}

// errorf raises a pattern error with Lua 5.1's wording. (RaiseError
// formats only when given arguments, so the message is formatted here.)
func (m *matcher) errorf(format string, args ...any) {
	m.L.RaiseError("%s", fmt.Sprintf(format, args...))
}

// reset prepares a new match attempt at another subject position.
func (m *matcher) reset() {
	m.level = 0
	m.depth = 0
}

// match tries pat[p:] against src[s:] and returns the end of the match, or
// -1. It is lstrlib.c's match; the "goto init" tail calls are the loop.
func (m *matcher) match(s, p int) int {
	if m.depth >= maxMatchDepth {
		m.errorf("pattern too complex")
	}
	m.depth++
	r := m.doMatch(s, p)
	m.depth--
	return r
}

func (m *matcher) doMatch(s, p int) int {
	src, pat := m.src, m.pat
	for {
		m.step(1)
		if p == len(pat) { // end of pattern: match succeeded
			return s
		}
		switch pat[p] {
		case '(':
			if p+1 < len(pat) && pat[p+1] == ')' {
				return m.startCapture(s, p+2, capPosition)
			}
			return m.startCapture(s, p+1, capUnfinished)
		case ')':
			return m.endCapture(s, p+1)
		case '$':
			if p+1 == len(pat) { // '$' is an anchor only as the last byte
				if s == len(src) {
					return s
				}
				return -1
			}
		case '%':
			if p+1 < len(pat) {
				switch pat[p+1] {
				case 'b':
					if s = m.matchBalance(s, p+2); s < 0 {
						return -1
					}
					p += 4
					continue
				case 'f':
					p += 2
					if p >= len(pat) || pat[p] != '[' {
						m.errorf("missing '[' after '%%f' in pattern")
					}
					ep := m.classEnd(p)
					m.step(setCost(pat, p, ep))
					var prev, cur byte // NUL before the start and at the end, as in C
					if s > 0 {
						prev = src[s-1]
					}
					if s < len(src) {
						cur = src[s]
					}
					if matchBracketClass(prev, pat, p, ep-1) || !matchBracketClass(cur, pat, p, ep-1) {
						return -1
					}
					p = ep
					continue
				default:
					if isDigit(pat[p+1]) { // back-reference %1-%9
						if s = m.matchCapture(s, pat[p+1]); s < 0 {
							return -1
						}
						p += 2
						continue
					}
				}
			}
		}

		// A single-byte item, possibly followed by a repetition.
		ep := m.classEnd(p)
		m.step(setCost(pat, p, ep))
		matched := s < len(src) && singleMatch(src[s], pat, p, ep)
		if ep < len(pat) {
			switch pat[ep] {
			case '?':
				if matched {
					if r := m.match(s+1, ep+1); r >= 0 {
						return r
					}
				}
				p = ep + 1
				continue
			case '*':
				return m.maxExpand(s, p, ep)
			case '+':
				if !matched {
					return -1
				}
				return m.maxExpand(s+1, p, ep)
			case '-':
				return m.minExpand(s, p, ep)
			}
		}
		if !matched {
			return -1
		}
		s++
		p = ep
	}
}

// classEnd returns the index just past the single-byte class at pat[p].
func (m *matcher) classEnd(p int) int {
	pat := m.pat
	c := pat[p]
	p++
	switch c {
	case '%':
		if p >= len(pat) {
			m.errorf("malformed pattern (ends with '%%')")
		}
		return p + 1
	case '[':
		if p < len(pat) && pat[p] == '^' {
			p++
		}
		// The first member is taken before looking for ']', so "[]]" is
		// the set of ']'.
		for {
			if p >= len(pat) {
				m.errorf("malformed pattern (missing ']')")
			}
			c := pat[p]
			p++
			if c == '%' && p < len(pat) {
				p++ // skip escapes such as %]
			}
			if p < len(pat) && pat[p] == ']' {
				return p + 1
			}
		}
	}
	return p
}

// setCost is the extra charge for one visit of the class pat[p:ep]: zero
// for a single byte or %-class, and about one step per eight bytes of a
// set, since classEnd and matchBracketClass walk the whole set each time.
// Without it, a set of 60 KB repeated over a long subject would do 10^12
// byte comparisons on a budget that counts only 10^7 of them.
func setCost(pat string, p, ep int) int {
	if pat[p] != '[' {
		return 0
	}
	return (ep - p) >> 3
}

// singleMatch reports whether byte c matches the class pat[p:ep].
func singleMatch(c byte, pat string, p, ep int) bool {
	switch pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, pat[p+1])
	case '[':
		return matchBracketClass(c, pat, p, ep-1)
	}
	return pat[p] == c
}

// matchBracketClass reports whether c is in the set pat[p:ec+1], where
// pat[p] is '[' and pat[ec] its closing ']'.
func matchBracketClass(c byte, pat string, p, ec int) bool {
	sig := true
	if pat[p+1] == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case pat[p] == '%':
			p++
			if matchClass(c, pat[p]) {
				return sig
			}
		case pat[p+1] == '-' && p+2 < ec:
			p += 2
			if pat[p-2] <= c && c <= pat[p] {
				return sig
			}
		case pat[p] == c:
			return sig
		}
	}
	return !sig
}

// maxExpand matches as many repetitions of pat[p:ep] as it can, then gives
// them back one by one until the rest of the pattern matches. The scan and
// every give-back are charged.
func (m *matcher) maxExpand(s, p, ep int) int {
	i := 0
	if c := setCost(m.pat, p, ep); c > 0 {
		// A long set makes each byte expensive: charge as it goes, so a
		// huge set over a huge subject still meets a checkpoint.
		for s+i < len(m.src) && singleMatch(m.src[s+i], m.pat, p, ep) {
			i++
			m.step(c)
		}
	} else {
		for s+i < len(m.src) && singleMatch(m.src[s+i], m.pat, p, ep) {
			i++
		}
	}
	m.step(i)
	for ; i >= 0; i-- {
		if r := m.match(s+i, ep+1); r >= 0 {
			return r
		}
	}
	return -1
}

// minExpand matches as few repetitions of pat[p:ep] as it can.
func (m *matcher) minExpand(s, p, ep int) int {
	c := setCost(m.pat, p, ep)
	for {
		if r := m.match(s, ep+1); r >= 0 {
			return r
		}
		m.step(c)
		if s < len(m.src) && singleMatch(m.src[s], m.pat, p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (m *matcher) startCapture(s, p, what int) int {
	if m.level >= maxCaptures {
		m.errorf("too many captures")
	}
	m.caps[m.level] = capture{init: s, len: what}
	m.level++
	r := m.match(s, p)
	if r < 0 {
		m.level-- // undo the capture
	}
	return r
}

func (m *matcher) endCapture(s, p int) int {
	l := m.captureToClose()
	m.caps[l].len = s - m.caps[l].init
	r := m.match(s, p)
	if r < 0 {
		m.caps[l].len = capUnfinished
	}
	return r
}

func (m *matcher) captureToClose() int {
	for l := m.level - 1; l >= 0; l-- {
		if m.caps[l].len == capUnfinished {
			return l
		}
	}
	m.errorf("invalid pattern capture")
	return 0
}

// matchBalance is %bxy: pat[p] opens, pat[p+1] closes.
func (m *matcher) matchBalance(s, p int) int {
	if p+1 >= len(m.pat) {
		m.errorf("unbalanced pattern")
	}
	src := m.src
	if s >= len(src) || src[s] != m.pat[p] {
		return -1
	}
	open, closing := m.pat[p], m.pat[p+1]
	cont := 1
	for i := s + 1; i < len(src); i++ {
		if src[i] == closing {
			if cont--; cont == 0 {
				m.step(i - s)
				return i + 1
			}
		} else if src[i] == open {
			cont++
		}
	}
	m.step(len(src) - s)
	return -1 // the subject ends out of balance
}

// matchCapture is a back-reference %1-%9 (l is the digit byte).
func (m *matcher) matchCapture(s int, l byte) int {
	idx := int(l) - '1'
	if idx < 0 || idx >= m.level || m.caps[idx].len == capUnfinished {
		m.errorf("invalid capture index")
	}
	c := m.caps[idx]
	if c.len < 0 { // a position capture never matches text (C compares a huge size_t)
		return -1
	}
	m.step(c.len)
	if len(m.src)-s >= c.len && m.src[c.init:c.init+c.len] == m.src[s:s+c.len] {
		return s + c.len
	}
	return -1
}

// captureValue is push_onecapture: capture i of the match src[s:e] as a
// Lua value; with no captures, "capture 0" is the whole match.
func (m *matcher) captureValue(i, s, e int) lua.LValue {
	if i >= m.level {
		if i != 0 {
			m.errorf("invalid capture index")
		}
		return lua.LString(m.src[s:e])
	}
	c := m.caps[i]
	switch c.len {
	case capUnfinished:
		m.errorf("unfinished capture")
	case capPosition:
		return lua.LNumber(c.init + 1)
	}
	return lua.LString(m.src[c.init : c.init+c.len])
}

// pushCaptures pushes the captures of the match src[s:e] and returns how
// many. With whole set and no captures it pushes the whole match (match,
// gmatch, gsub); find passes whole=false because it returns the bounds.
func (m *matcher) pushCaptures(s, e int, whole bool) int {
	n := m.level
	if n == 0 && whole {
		n = 1
	}
	for i := range n {
		m.L.Push(m.captureValue(i, s, e))
	}
	return n
}
