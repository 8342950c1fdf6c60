package strlib

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// string.format. gopher-lua handed the whole format string to Go's
// fmt.Sprintf, so any width was honoured ("%999999999d" allocates a
// gigabyte) and Go's own verbs and error texts leaked into Lua ("%!d(MISSING)",
// "%b", "%v"). Here the format is parsed as Lua 5.1's str_format parses it —
// flags from "-+ #0", at most two digits of width and of precision, the
// conversions c d i o u x X e E f g G q s — and each numeric conversion is
// still printed by fmt with the value gopher-lua would have passed, so
// numbers look exactly as they did under gopher-lua.

const (
	formatFlags = "-+ #0"
	// maxItem bounds the text of one numeric conversion: two-digit width
	// and precision cannot make "%99.99f" of -1e308 longer (lstrlib.c's
	// MAX_ITEM). Only %s and %q can be longer, and they are sized first.
	maxItem = 512
)

// format is string.format(fmt, ...).
func (lib *library) format(L *lua.LState) int {
	top := L.GetTop()
	f := L.CheckString(1)
	b := lib.newBuffer(L, "string.format", len(f)+16)
	arg := 1
	var scratch [maxItem]byte
	for i := 0; i < len(f); {
		if f[i] != '%' {
			j := strings.IndexByte(f[i:], '%')
			if j < 0 {
				j = len(f) - i
			}
			b.addString(f[i : i+j])
			i += j
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			b.addByte('%')
			i++
			continue
		}
		arg++
		if arg > top {
			L.ArgError(arg, "no value")
		}
		spec := lib.scanFormat(L, f, i)
		i = spec.end + 1
		switch spec.conv {
		case 'd', 'i', 'u':
			// Go has no %u (gopher-lua printed "%!u(int64=3)"); Lua 5.1
			// prints the unsigned value, which is %d for non-negatives.
			b.addBytes(fmt.Appendf(scratch[:0], spec.goFormat('d'), toInt64(L.CheckNumber(arg))))
		case 'o', 'x', 'X':
			b.addBytes(fmt.Appendf(scratch[:0], spec.goFormat(spec.conv), toInt64(L.CheckNumber(arg))))
		case 'e', 'E', 'f', 'g', 'G':
			b.addBytes(fmt.Appendf(scratch[:0], spec.goFormat(spec.conv), float64(L.CheckNumber(arg))))
		case 'c':
			c := byte(toInt64(L.CheckNumber(arg))) // a byte, as C's (unsigned char) cast
			addPadded(b, spec, string([]byte{c}))
		case 's':
			addPadded(b, spec, formatString(L.Get(arg)))
		case 'q':
			addQuoted(b, L.CheckString(arg))
		default:
			c := "%"
			if spec.end < len(f) {
				c += string(spec.conv)
			}
			L.RaiseError("invalid option '%s' to 'format'", c)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// formatSpec is one parsed conversion: f[start:end] holds its flags, width
// and precision, f[end] its conversion byte.
type formatSpec struct {
	f          string
	start, end int
	conv       byte
	width      int // -1 when absent
	prec       int // -1 when absent
	left       bool
}

// scanFormat parses the conversion that starts at f[i] (just after '%'),
// as lstrlib.c's scanformat: a width or precision of three digits or more
// would let a script ask for any size, so it is a limit error rather than
// Lua 5.1's plain one.
func (lib *library) scanFormat(L *lua.LState, f string, i int) formatSpec {
	spec := formatSpec{f: f, start: i, width: -1, prec: -1}
	p := i
	for p < len(f) && strings.IndexByte(formatFlags, f[p]) >= 0 {
		if f[p] == '-' {
			spec.left = true
		}
		p++
	}
	if p-i > len(formatFlags) {
		L.RaiseError("invalid format (repeated flags)")
	}
	digits := func(p int) (int, int) {
		v, n := 0, 0
		for p+n < len(f) && isDigit(f[p+n]) {
			if n == 2 {
				lib.exceeded(L, "string.format: width or precision longer than 2 digits")
			}
			v = v*10 + int(f[p+n]-'0')
			n++
		}
		return v, n
	}
	if v, n := digits(p); n > 0 {
		spec.width = v
		p += n
	}
	if p < len(f) && f[p] == '.' {
		p++
		v, n := digits(p)
		spec.prec = v // "%.s" is precision 0, as in C
		p += n
	}
	spec.end = p
	if p < len(f) {
		spec.conv = f[p]
	}
	return spec
}

// goFormat is the spec as a Go format with verb.
func (s formatSpec) goFormat(verb byte) string {
	return "%" + s.f[s.start:s.end] + string(verb)
}

// toInt64 is the C cast (long)n on amd64: truncation toward zero, and the
// "integer indefinite" value for NaN and out-of-range numbers, so the
// result does not depend on the platform as Go's own conversion does.
func toInt64(n lua.LNumber) int64 {
	f := float64(n)
	if math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

// formatString is the text %s prints: strings as they are, numbers and
// other values as gopher-lua printed them (Lua 5.1 refused non-strings;
// gopher-lua printed "nil", "true", "table: 0x...", and scripts rely on it).
func formatString(v lua.LValue) string {
	if s, ok := v.(lua.LString); ok {
		return string(s)
	}
	return v.String()
}

// addPadded appends s cut to the spec's precision and padded with spaces
// to its width, both counted in bytes as C does (Go's fmt counts runes).
func addPadded(b *buffer, spec formatSpec, s string) {
	if spec.prec >= 0 && spec.conv == 's' && len(s) > spec.prec {
		s = s[:spec.prec]
	}
	pad := max(spec.width-len(s), 0)
	b.grow(len(s) + pad)
	if !spec.left {
		b.buf = append(b.buf, strings.Repeat(" ", pad)...)
	}
	b.buf = append(b.buf, s...)
	if spec.left {
		b.buf = append(b.buf, strings.Repeat(" ", pad)...)
	}
}

// addQuoted is Lua 5.1's %q: a string literal that reads back as s in
// any Lua, gopher-lua included. gopher-lua's Go-style quoting produced
// escapes such as \x80 and \u00e9 that its own lexer does not know.
func addQuoted(b *buffer, s string) {
	n := 2
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\', '\n', '\r':
			n += 2
		case 0:
			n += 4
		default:
			n++
		}
	}
	b.grow(n)
	b.buf = append(b.buf, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b.buf = append(b.buf, '\\', c)
		case '\r':
			b.buf = append(b.buf, '\\', 'r')
		case 0:
			b.buf = append(b.buf, '\\', '0', '0', '0')
		default:
			b.buf = append(b.buf, c)
		}
	}
	b.buf = append(b.buf, '"')
}
