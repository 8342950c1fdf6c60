package codec

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/shieldrpc/shield/codes"
)

// MaxDepth is how deeply arrays and objects (tables, when encoding) may nest.
// It is far beyond any game message and keeps the recursive decoder and
// encoder within a small, fixed stack; a cycle reaches it too, but the
// encoder reports cycles on their own.
const MaxDepth = 128

// errKind classifies decode errors for tests: the fuzz target compares
// acceptance with encoding/json.Valid, which checks syntax only, so it must
// tell a depth or range rejection from a syntax one.
type errKind uint8

const (
	kindSyntax errKind = iota // not RFC 8259 JSON
	kindUTF8                  // invalid UTF-8 inside a string
	kindDepth                 // nested deeper than MaxDepth
	kindRange                 // a number beyond float64's range
)

// DecodeError is a body that is not the JSON the codec accepts. It unwraps
// to a *codes.Error with code client_rpc.decode_failed, so errors.As,
// errors.Is and codes.CodeOf see the code SPEC section 6 sends.
type DecodeError struct {
	Offset int    // byte offset in the input where decoding stopped
	Reason string // what was wrong, quoting a short prefix of the input there

	kind  errKind
	coded codes.Error // the same text under its client-visible code
}

// Error returns "client_rpc.decode_failed: json: <reason> at offset <n>".
func (e *DecodeError) Error() string { return e.coded.Error() }

// Unwrap returns the error as its client-visible *codes.Error.
func (e *DecodeError) Unwrap() error { return &e.coded }

// nearBytes is how much input an error message quotes.
const nearBytes = 16

// strSafe[c] is true for the ASCII bytes a JSON string holds unescaped, both
// when reading and when writing: printable ASCII except '"' and '\'.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanner is the lexer the decoder and UnwrapLegacy share: it reads tokens
// from data at off and never builds Lua values.
type scanner struct {
	data []byte
	off  int
}

func (s *scanner) fail(kind errKind, off int, format string, args ...any) *DecodeError {
	reason := fmt.Sprintf(format, args...)
	return &DecodeError{
		Offset: off,
		Reason: reason,
		kind:   kind,
		coded: codes.Error{
			Code:    codes.DecodeFailed,
			Message: "json: " + reason + " at offset " + strconv.Itoa(off),
		},
	}
}

// unexpected reports that want was expected at s.off but is not there.
func (s *scanner) unexpected(want string) *DecodeError {
	if s.off >= len(s.data) {
		return s.fail(kindSyntax, s.off, "unexpected end of input, expected %s", want)
	}
	near := s.data[s.off:min(len(s.data), s.off+nearBytes)]
	return s.fail(kindSyntax, s.off, "expected %s, found %q", want, near)
}

func (s *scanner) skipWS() {
	for s.off < len(s.data) {
		switch s.data[s.off] {
		case ' ', '\t', '\n', '\r':
			s.off++
		default:
			return
		}
	}
}

// next reports whether the byte at s.off is c.
func (s *scanner) next(c byte) bool {
	return s.off < len(s.data) && s.data[s.off] == c
}

// literal consumes word (true, false or null) at s.off.
func (s *scanner) literal(word string) error {
	end := s.off + len(word)
	if end > len(s.data) || string(s.data[s.off:end]) != word {
		return s.unexpected(word)
	}
	s.off += len(word)
	return nil
}

// str reads the string whose opening quote is at s.off and returns its
// unescaped bytes: a view of data when it holds no escape (the common case,
// with no copy), else buf's contents. buf is returned, possibly grown, for
// reuse; either result is only valid until the next call.
func (s *scanner) str(buf []byte) (text, newBuf []byte, err error) {
	data := s.data
	start := s.off + 1
	i := start
	for i < len(data) {
		c := data[i]
		if strSafe[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			s.off = i + 1
			return data[start:i], buf, nil
		case c == '\\':
			return s.strEscaped(append(buf[:0], data[start:i]...), i)
		case c < 0x20:
			return nil, buf, s.fail(kindSyntax, i, "control character %q in string", c)
		}
		size, err := s.utf8At(i)
		if err != nil {
			return nil, buf, err
		}
		i += size
	}
	return nil, buf, s.fail(kindSyntax, s.off, "unterminated string")
}

// strEscaped continues str from the first backslash, at i, writing the
// unescaped text to buf.
func (s *scanner) strEscaped(buf []byte, i int) (text, newBuf []byte, err error) {
	data := s.data
	for i < len(data) {
		c := data[i]
		if strSafe[c] {
			buf = append(buf, c)
			i++
			continue
		}
		switch {
		case c == '"':
			s.off = i + 1
			return buf, buf, nil
		case c == '\\':
			if i+1 >= len(data) {
				return nil, buf, s.fail(kindSyntax, s.off, "unterminated string")
			}
			n, err := s.escape(&buf, i)
			if err != nil {
				return nil, buf, err
			}
			i += n
			continue
		case c < 0x20:
			return nil, buf, s.fail(kindSyntax, i, "control character %q in string", c)
		}
		size, err := s.utf8At(i)
		if err != nil {
			return nil, buf, err
		}
		buf = append(buf, data[i:i+size]...)
		i += size
	}
	return nil, buf, s.fail(kindSyntax, s.off, "unterminated string")
}

// escape appends the character of the escape sequence at i to *buf and
// returns the sequence's length. UTF-16 surrogates follow encoding/json: a
// valid pair is one character, any other surrogate is U+FFFD.
func (s *scanner) escape(buf *[]byte, i int) (int, error) {
	data := s.data
	var c byte
	switch data[i+1] {
	case '"', '\\', '/':
		c = data[i+1]
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		r := hex4(data[i+2:])
		if r < 0 {
			near := data[i:min(len(data), i+6)]
			return 0, s.fail(kindSyntax, i, "invalid escape %q", near)
		}
		n := 6
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
				r2 = hex4(data[i+8:])
			}
			if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
				r, n = dec, 12
			} else {
				r = unicode.ReplacementChar
			}
		}
		*buf = utf8.AppendRune(*buf, r)
		return n, nil
	default:
		return 0, s.fail(kindSyntax, i, "invalid escape %q", data[i:i+2])
	}
	*buf = append(*buf, c)
	return 2, nil
}

// hex4 decodes the four hex digits at the start of b, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// utf8At returns the length of the UTF-8 sequence at i, which must be
// valid: SPEC strings are bytes, but a body's text must be UTF-8 (RFC 8259).
func (s *scanner) utf8At(i int) (int, error) {
	r, size := utf8.DecodeRune(s.data[i:])
	if r == utf8.RuneError && size == 1 {
		return 0, s.fail(kindUTF8, i, "invalid UTF-8 byte %q in string", s.data[i])
	}
	return size, nil
}

// numLit is a number token: its text is data[start:end].
type numLit struct {
	start, end int
	neg        bool
	isInt      bool   // no fraction and no exponent
	exp        bool   // an exponent part
	digits     int    // integer digits
	frac       int    // fraction digits
	mant       uint64 // the value of all the digits, integer and fraction, when digits+frac <= 19
}

// maxExactDigits is the most decimal digits a uint64 always holds.
const maxExactDigits = 19

// number scans the RFC 8259 number at s.off. A leading zero followed by a
// digit ends the token after the zero, so the caller rejects what follows.
func (s *scanner) number() (numLit, error) {
	data := s.data
	lit := numLit{start: s.off, isInt: true}
	i := s.off
	if data[i] == '-' {
		lit.neg = true
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
		lit.digits = 1
		if i < len(data) && '0' <= data[i] && data[i] <= '9' {
			return lit, s.fail(kindSyntax, i-1, "number with a leading zero")
		}
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		for ; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
			if lit.digits < maxExactDigits {
				lit.mant = lit.mant*10 + uint64(data[i]-'0')
			}
			lit.digits++
		}
	default:
		s.off = i
		return lit, s.unexpected("a digit")
	}
	if i < len(data) && data[i] == '.' {
		lit.isInt = false
		start := i + 1
		if i = digits(data, start); i < 0 {
			s.off = -i
			return lit, s.unexpected("a digit after '.'")
		}
		lit.frac = i - start
		if lit.digits+lit.frac <= maxExactDigits {
			for _, c := range data[start:i] {
				lit.mant = lit.mant*10 + uint64(c-'0')
			}
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		lit.isInt = false
		lit.exp = true
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i = digits(data, i); i < 0 {
			s.off = -i
			return lit, s.unexpected("a digit in the exponent")
		}
	}
	lit.end, s.off = i, i
	return lit, nil
}

// digits skips one or more digits from i and returns the offset after them,
// or -i when there is none.
func digits(data []byte, i int) int {
	start := i
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	if i == start {
		return -i
	}
	return i
}

// skipValue validates and skips the value at s.off, depth being the number
// of containers around it. UnwrapLegacy uses it where no Lua value is
// wanted; it accepts exactly what the decoder accepts, number range aside.
func (s *scanner) skipValue(depth int, buf []byte) ([]byte, error) {
	if s.off >= len(s.data) {
		return buf, s.unexpected("a value")
	}
	var err error
	switch c := s.data[s.off]; c {
	case '"':
		_, buf, err = s.str(buf)
	case 't':
		err = s.literal("true")
	case 'f':
		err = s.literal("false")
	case 'n':
		err = s.literal("null")
	case '[', '{':
		if depth >= MaxDepth {
			return buf, s.fail(kindDepth, s.off, "nesting deeper than %d", MaxDepth)
		}
		return s.skipContainer(depth+1, buf)
	default:
		if c != '-' && (c < '0' || c > '9') {
			return buf, s.unexpected("a value")
		}
		_, err = s.number()
	}
	return buf, err
}

// skipContainer skips the array or object at s.off.
func (s *scanner) skipContainer(depth int, buf []byte) ([]byte, error) {
	isObject := s.data[s.off] == '{'
	closing, want := byte(']'), "',' or ']'"
	if isObject {
		closing, want = '}', "',' or '}'"
	}
	s.off++
	s.skipWS()
	if s.next(closing) {
		s.off++
		return buf, nil
	}
	for {
		var err error
		if isObject {
			if buf, err = s.key(buf); err != nil {
				return buf, err
			}
		}
		if buf, err = s.skipValue(depth, buf); err != nil {
			return buf, err
		}
		s.skipWS()
		switch {
		case s.next(','):
			s.off++
			s.skipWS()
		case s.next(closing):
			s.off++
			return buf, nil
		default:
			return buf, s.unexpected(want)
		}
	}
}

// key skips an object key and the colon after it, leaving s.off at the
// value.
func (s *scanner) key(buf []byte) ([]byte, error) {
	_, buf, err := s.keyText(buf)
	return buf, err
}

// keyText reads an object key and the colon after it, leaving s.off at the
// value. The text is valid until the next string read.
func (s *scanner) keyText(buf []byte) (text, newBuf []byte, err error) {
	if !s.next('"') {
		return nil, buf, s.unexpected("a string key")
	}
	text, buf, err = s.str(buf)
	if err != nil {
		return nil, buf, err
	}
	s.skipWS()
	if !s.next(':') {
		return nil, buf, s.unexpected("':' after object key")
	}
	s.off++
	s.skipWS()
	return text, buf, nil
}
