package strlib

// Character classes of Lua patterns (%a, %d, ...) in the C locale, which is
// the locale a Lua 5.1 interpreter starts in: only ASCII bytes belong to a
// class. The table is built once so that a class test is one load.

// classBits is one bit per class letter, indexed by byte.
var classBits [256]uint16

const (
	clAlpha uint16 = 1 << iota
	clCntrl
	clDigit
	clLower
	clPunct
	clSpace
	clUpper
	clAlnum
	clXdigit
	clZero
)

// classOf maps a lower-case class letter to its bit; other letters are not
// classes and match themselves (so %y is a literal 'y', as in Lua 5.1).
var classOf = [256]uint16{
	'a': clAlpha, 'c': clCntrl, 'd': clDigit, 'l': clLower, 'p': clPunct,
	's': clSpace, 'u': clUpper, 'w': clAlnum, 'x': clXdigit, 'z': clZero,
}

func init() {
	for i := range 256 {
		c := byte(i)
		var b uint16
		lower, upper, digit := 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9'
		if lower || upper {
			b |= clAlpha
		}
		if c < 0x20 || c == 0x7f {
			b |= clCntrl
		}
		if digit {
			b |= clDigit
		}
		if lower {
			b |= clLower
		}
		if upper {
			b |= clUpper
		}
		if lower || upper || digit {
			b |= clAlnum
		}
		if c > 0x20 && c < 0x7f && !(lower || upper || digit) {
			b |= clPunct
		}
		if c == ' ' || (c >= '\t' && c <= '\r') {
			b |= clSpace
		}
		if digit || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') {
			b |= clXdigit
		}
		if c == 0 {
			b |= clZero
		}
		classBits[i] = b
	}
}

// matchClass is lstrlib.c's match_class: whether c is in class cl (the
// byte after '%'). An upper-case class letter is the complement.
func matchClass(c, cl byte) bool {
	lc := cl
	if 'A' <= cl && cl <= 'Z' {
		lc = cl | 0x20
	}
	bit := classOf[lc]
	if bit == 0 {
		return cl == c
	}
	res := classBits[c]&bit != 0
	if lc != cl {
		return !res
	}
	return res
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
