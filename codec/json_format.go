package codec

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// appendNumber writes f, which must be finite, as encoding/json writes a
// float64: the ECMAScript Number-to-string form, so JavaScript clients read
// the same text they would write. Integral values below 1e21 get plain
// digits, others the shortest digits that read back as f, with an exponent
// below 1e-6 and from 1e21 up. Negative zero is written "0".
func appendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	// Fast path for the common integer: below 2^53 every integral float64 is
	// an exact int64 and its digits are its shortest form.
	if f > -maxSafeInteger && f < maxSafeInteger {
		if i := int64(f); float64(i) == f {
			return strconv.AppendInt(b, i, 10)
		}
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	} else if out, ok := appendShortDecimal(b, f); ok {
		return out
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// strconv writes at least two exponent digits (1e-07); JavaScript
		// and encoding/json write as few as needed (1e-7).
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string and reports whether s was valid
// UTF-8; on false, b holds a partial string the caller throws away. Only
// '"', '\' and control characters are escaped: no HTML escaping (SPEC), and
// non-ASCII text, U+2028 included, is written as is.
// Not shared with envelope.appendJSONString, which mirrors encoding/json instead.
func appendString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	start := 0 // s[start:i] is pending, to be copied in one append
	for i := 0; i < len(s); {
		c := s[i]
		if strSafe[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return b, false
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}
