package strlib

import (
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// buffer accumulates a result whose final size is not known up front
// (gsub, format) and refuses to grow past the library's MaxStringBytes: the
// check runs before each append, so a runaway result costs at most the cap,
// never the size it asked for. Growth is capped at the limit too, so the
// usual doubling of append cannot overshoot it.
type buffer struct {
	lib *library
	L   *lua.LState
	fn  string // the Lua function's name, for the error
	buf []byte
}

// newBuffer returns an empty buffer expecting about hint bytes.
func (lib *library) newBuffer(L *lua.LState, fn string, hint int) *buffer {
	return &buffer{lib: lib, L: L, fn: fn, buf: make([]byte, 0, min(hint, lib.maxBytes))}
}

// grow makes room for n more bytes, or raises when the result would pass
// the limit.
func (b *buffer) grow(n int) {
	need := len(b.buf) + n
	if need > b.lib.maxBytes {
		b.lib.tooLong(b.L, b.fn, float64(need))
	}
	if need > cap(b.buf) {
		nb := make([]byte, len(b.buf), min(max(2*cap(b.buf), need, 64), b.lib.maxBytes))
		copy(nb, b.buf)
		b.buf = nb
	}
}

func (b *buffer) addString(s string) {
	b.grow(len(s))
	b.buf = append(b.buf, s...)
}

func (b *buffer) addBytes(s []byte) {
	b.grow(len(s))
	b.buf = append(b.buf, s...)
}

func (b *buffer) addByte(c byte) {
	b.grow(1)
	b.buf = append(b.buf, c)
}

// String returns the result without copying it; the buffer must not be
// used afterwards.
func (b *buffer) String() string {
	return bytesToString(b.buf)
}

// bytesToString returns buf as a string without a copy. Results here are
// up to MaxStringBytes long, and converting with string(buf) would hold two
// of them at once; buf must never be written after the call.
func bytesToString(buf []byte) string {
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}
