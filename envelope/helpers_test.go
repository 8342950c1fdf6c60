package envelope

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"strings"
	"testing"
)

// mustNew returns the named codec or fails the test.
func mustNew(tb testing.TB, name string, side Side, maxBytes int) Framer {
	tb.Helper()
	c, err := New(name, side, maxBytes)
	if err != nil {
		tb.Fatalf("New(%q, %v, %d): %v", name, side, maxBytes, err)
	}
	return c
}

// hx decodes hex written with spaces between the fields, as the layout
// diagrams in SPEC.md draw them.
func hx(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		tb.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// sameFrame compares frames, treating a nil and an empty Body alike.
func sameFrame(a, b Frame) bool {
	return a.Kind == b.Kind && a.RouteID == b.RouteID && a.RequestID == b.RequestID &&
		a.Route == b.Route && bytes.Equal(a.Body, b.Body) && a.Code == b.Code && a.Message == b.Message &&
		a.Token == b.Token && a.GraceMS == b.GraceMS && a.DeadlineMS == b.DeadlineMS && a.RetryAfterMS == b.RetryAfterMS
}

// sameFrameOn is sameFrame as an envelope can keep it: delimiter drops the
// newlines of a payload (JSON whitespace, never inside a string) so that a
// frame stays on one line.
func sameFrameOn(envelope string, a, b Frame) bool {
	if envelope == NameDelimiter {
		a.Body = bytes.ReplaceAll(a.Body, []byte("\n"), nil)
		b.Body = bytes.ReplaceAll(b.Body, []byte("\n"), nil)
	}
	return sameFrame(a, b)
}

// splitReader returns data[:half], then data[half:], then io.EOF, as
// nats-server's parser fuzz feeds its parser.
type splitReader struct {
	parts [][]byte
}

func newSplitReader(data []byte, half int) *splitReader {
	return &splitReader{parts: [][]byte{data[:half], data[half:]}}
}

func (s *splitReader) Read(p []byte) (int, error) {
	for len(s.parts) > 0 && len(s.parts[0]) == 0 {
		s.parts = s.parts[1:]
	}
	if len(s.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.parts[0])
	s.parts[0] = s.parts[0][n:]
	return n, nil
}

// readAll reads frames until the first error, which it returns (io.EOF for
// a clean end).
func readAll(c Framer, r *bufio.Reader) ([]Frame, error) {
	var frames []Frame
	for {
		f, err := Read(c, r)
		if err != nil {
			return frames, err
		}
		frames = append(frames, f)
	}
}

// sameOutcome reports whether two errors from reading the same bytes agree:
// both nil, both io.EOF, or protocol errors with the same reason.
func sameOutcome(a, b error) bool {
	if a == nil || b == nil || a == io.EOF || b == io.EOF {
		return a == b
	}
	ra, oka := ReasonOf(a)
	rb, okb := ReasonOf(b)
	return oka && okb && ra == rb
}
