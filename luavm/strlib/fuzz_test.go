package strlib

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// Fuzz targets. FuzzPatternDifferential compares this package with
// gopher-lua's library on generated well-formed patterns, restricted to the
// constructs where gopher-lua agrees with Lua 5.1 (no %f, no
// back-references, no malformed tokens, init inside the subject: see
// compat_test.go for the rest). FuzzPatternRaw feeds raw bytes as both
// subject and pattern and checks only that nothing escapes as a Go panic
// and that results are in bounds. FuzzFormat does both for string.format.

// fuzzSteps is the budget of the probing run: a case that needs more is
// skipped, because gopher-lua's matcher, which has no budget, would need
// as long and could take minutes.
const fuzzSteps = 200_000

// fuzzStates are built once per target: a state per fuzz input would spend
// the fuzzing time opening libraries.
type fuzzStates struct {
	mine, probe, orig *lua.LState
}

func newFuzzStates(tb testing.TB) *fuzzStates {
	return &fuzzStates{
		mine:  newState(tb, DefaultLimits()),
		probe: newState(tb, Limits{MaxStringBytes: 1 << 20, MaxMatchSteps: fuzzSteps}),
		orig:  newOriginal(tb),
	}
}

// tooExpensive reports whether a call needs more than fuzzSteps steps.
func (fs *fuzzStates) tooExpensive(tb testing.TB, fn string, args ...lua.LValue) bool {
	_, err := callString(fs.probe, fn, args...)
	checkNoGoPanic(tb, err)
	return err != nil && strings.Contains(err.Error(), "max_match_steps")
}

func checkNoGoPanic(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, errGoPanic) {
		tb.Fatal(err)
	}
}

var fuzzRepls = []string{"<%0>", "%1", "x", "%%", ""}

func FuzzPatternDifferential(f *testing.F) {
	f.Add([]byte("hello world"))
	f.Add([]byte{3, 1, 7, 9, 0, 2, 5, 10, 12, 200, 17, 33, 4, 8, 1, 1, 6})
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	fs := newFuzzStates(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &genReader{data: data}
		s := r.genSubject(16)
		p := r.genPattern(6, genOptions{other: balanceItems})
		init := int(r.next()%40) - 20
		init = min(init, len(s)+1) // gopher-lua ignores init past the end
		n := int(r.next() % 5)     // 0: absent; gopher-lua mishandles n <= 0
		repl := r.pick(fuzzRepls)

		// gsub tries every start position, so it costs at least what the
		// other functions do.
		if fs.tooExpensive(t, "gsub", lua.LString(s), lua.LString(p), lua.LString("")) {
			return
		}
		for _, fn := range []string{"find", "match"} {
			args := []lua.LValue{lua.LString(s), lua.LString(p), lua.LNumber(init)}
			compare(t, fs, fn+fmt.Sprintf("(%q, %q, %d)", s, p, init), func(L *lua.LState) (string, error) {
				vals, err := callString(L, fn, args...)
				return show(vals), err
			})
		}
		gargs := []lua.LValue{lua.LString(s), lua.LString(p), lua.LString(repl)}
		if n > 0 {
			gargs = append(gargs, lua.LNumber(n))
		}
		compare(t, fs, fmt.Sprintf("gsub(%q, %q, %q, %d)", s, p, repl, n), func(L *lua.LState) (string, error) {
			vals, err := callString(L, "gsub", gargs...)
			return show(vals), err
		})
		if !strings.HasPrefix(p, "^") { // a literal in Lua 5.1's gmatch, an anchor in gopher-lua's
			compare(t, fs, fmt.Sprintf("gmatch(%q, %q)", s, p), func(L *lua.LState) (string, error) {
				steps, err := gmatchAll(L, s, p, 64)
				return showSteps(steps), err
			})
		}
	})
}

// compare runs call in both libraries; a case the original rejects is
// skipped (its errors differ from Lua 5.1's, see compat_test.go).
func compare(t *testing.T, fs *fuzzStates, what string, call func(*lua.LState) (string, error)) {
	t.Helper()
	want, werr := call(fs.orig)
	if werr != nil {
		return
	}
	got, err := call(fs.mine)
	checkNoGoPanic(t, err)
	if err != nil {
		t.Fatalf("%s: %v, gopher-lua %s", what, err, want)
	}
	if got != want {
		t.Fatalf("%s = %s, gopher-lua %s", what, got, want)
	}
}

func FuzzPatternRaw(f *testing.F) {
	f.Add("hello world", "(%w+)%s*", 1)
	f.Add("f(a(b)c)d", "%b()", -3)
	f.Add("THE (quick) fox", "%f[%a]%a+", 2)
	f.Add(strings.Repeat("a", 40), ".-.-.-.-b$", 1)
	f.Add("x", "[%", 0)
	f.Add("abcabc", "(a)(b)(c)%3%2%1", 1)
	L := newState(f, Limits{MaxStringBytes: 1 << 20, MaxMatchSteps: fuzzSteps})
	f.Fuzz(func(t *testing.T, s, p string, init int) {
		if len(s) > 256 || len(p) > 64 {
			return
		}
		args := []lua.LValue{lua.LString(s), lua.LString(p), lua.LNumber(init)}
		vals, err := callString(L, "find", args...)
		checkNoGoPanic(t, err)
		if err == nil && vals[0] != lua.LNil {
			i, j := int(vals[0].(lua.LNumber)), int(vals[1].(lua.LNumber))
			if i < 1 || i > j+1 || j > len(s) {
				t.Fatalf("find(%q, %q, %d) = %d, %d: out of the subject", s, p, init, i, j)
			}
		}
		_, err = callString(L, "match", args...)
		checkNoGoPanic(t, err)
		_, err = gmatchAll(L, s, p, 300)
		checkNoGoPanic(t, err)
		vals, err = callString(L, "gsub", lua.LString(s), lua.LString(p), lua.LString("[%0%1]"))
		checkNoGoPanic(t, err)
		if err == nil {
			if count := int(vals[1].(lua.LNumber)); count > len(s)+1 {
				t.Fatalf("gsub(%q, %q) made %d replacements in %d bytes", s, p, count, len(s))
			}
		}
	})
}

// Format pieces for the differential part of FuzzFormat: conversions that
// gopher-lua and this package print alike (numbers through Go's fmt, %s of
// ASCII without the '0' flag, which Go pads with zeros and C with spaces).
var (
	formatLiterals = []string{"", "x", "=", " items", "%%", "[", "]"}
	formatVerbs    = []string{"d", "i", "x", "X", "o", "e", "E", "f", "g", "G", "s"}
	formatFlagSets = []string{"", "", "-", "+", " ", "#", "0", "-0", "+0", "- ", "#0"}
	formatNumbers  = []float64{0, 1, -1, 42, -42, 3.14159, -2.5, 1e10, 1e-5, 255, 65535, 123456789, 0.1}
	formatStrings  = []string{"", "a", "hello", "spaced out", "0123456789abcdef"}
)

// goFmtError matches the texts Go's fmt writes for a bad verb, width or
// argument ("%!d(string=x)", "%!v(MISSING)", "%!(EXTRA int=1)",
// "%!(NOVERB)"). A bare "%!" is no evidence: "%%%c" of 33 is "%!" in Lua
// too. The test skips a match whose text after "%!" the inputs carry.
var goFmtError = regexp.MustCompile(`%![a-zA-Z]?\((MISSING|NOVERB|BADWIDTH|BADPREC|BADINDEX|EXTRA |[a-z0-9.*\[\]]+=)`)

func FuzzFormat(f *testing.F) {
	f.Add([]byte("fmt"), "%5.2f|%-8d|%x", "plain")
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, "%99999d", "")
	f.Add([]byte{}, "%q %c %s %u", "a\x00\"\\\n\r")
	f.Add([]byte{9, 9, 9}, "%------d %", "")
	fs := newFuzzStates(f)
	f.Fuzz(func(t *testing.T, data []byte, rawFormat, arg string) {
		// Raw part: any format string, arguments of every kind. Only Go
		// panics, Go's "%!" error texts and oversized results are bugs.
		if len(rawFormat) <= 64 {
			for _, a := range []lua.LValue{lua.LString(arg), lua.LNumber(len(arg)), lua.LNumber(math.Inf(1)), lua.LNil, fs.mine.NewTable()} {
				vals, err := callString(fs.probe, "format", lua.LString(rawFormat), a, a, a)
				checkNoGoPanic(t, err)
				if err != nil {
					continue
				}
				out := string(vals[0].(lua.LString))
				if m := goFmtError.FindString(out); m != "" && !strings.Contains(rawFormat+arg, m[2:]) {
					t.Fatalf("format(%q, %q) = %q: a Go fmt error text %q", rawFormat, arg, out, m)
				}
			}
		}

		// Differential part: a generated format against gopher-lua.
		r := &genReader{data: data}
		var b strings.Builder
		var args []lua.LValue
		for range int(r.next()%4) + 1 {
			b.WriteString(r.pick(formatLiterals))
			verb := r.pick(formatVerbs)
			flags := r.pick(formatFlagSets)
			if verb == "s" {
				flags = strings.ReplaceAll(flags, "0", "")
			}
			b.WriteString("%" + flags)
			if w := r.next() % 4; w > 0 {
				fmt.Fprint(&b, int(r.next()%30))
			}
			if r.next()%3 == 0 {
				fmt.Fprintf(&b, ".%d", int(r.next()%12))
			}
			b.WriteString(verb)
			if verb == "s" {
				args = append(args, lua.LString(r.pick(formatStrings)))
			} else {
				args = append(args, lua.LNumber(formatNumbers[int(r.next())%len(formatNumbers)]))
			}
		}
		format := b.String()
		all := append([]lua.LValue{lua.LString(format)}, args...)
		compare(t, fs, fmt.Sprintf("format(%q, %v)", format, args), func(L *lua.LState) (string, error) {
			vals, err := callString(L, "format", all...)
			return show(vals), err
		})
	})
}
