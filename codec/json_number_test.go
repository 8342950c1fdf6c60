package codec

import (
	"math"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// numberCases are decimals at and around the edges of the short paths:
// the digit counts, 2^53, exact halves, 10^22, and the 1e-6 and 1e21
// bounds of the fixed notation.
var numberCases = []string{
	"1024.5", "-33.25", "0.1", "0.2", "0.3", "-0.0", "0.0", "1.50", "0.000001", "0.0000001",
	"0.30000000000000004", "123456789.12345678", "1234567890123456.7", "9007199254740993.5",
	"9007199254740992.0", "4503599627370497.5", "0.1234567890123456789", "1.7976931348623157",
	"0.0000000000000000000001", "0.00000000000000000000001", "2.2250738585072014", "5e-324",
	"1e21", "123.456e2", "999999999999999999.9", "0.99999999999999999", "1.00000001", "12.345678901",
}

// TestNumberDecodeMatchesStrconv reads each case as DecodeJSON does and as
// strconv.ParseFloat does: the same bits (negative zero aside, which the
// decoder writes as 0 on purpose).
func TestNumberDecodeMatchesStrconv(t *testing.T) {
	L := newState(t)
	for _, in := range numberCases {
		checkDecodeNumber(t, L, in)
	}
}

func checkDecodeNumber(t *testing.T, L *lua.LState, in string) {
	t.Helper()
	want, err := strconv.ParseFloat(in, 64)
	if err != nil {
		t.Fatalf("ParseFloat(%s): %v", in, err)
	}
	v, err := DecodeJSON(L, []byte(in))
	if err != nil {
		t.Fatalf("DecodeJSON(%s): %v", in, err)
	}
	n, ok := v.(lua.LNumber)
	if !ok {
		if s, isStr := v.(lua.LString); isStr && string(s) == in {
			return // an integer literal above 2^53
		}
		t.Fatalf("DecodeJSON(%s) = %T %v", in, v, v)
	}
	if want == 0 {
		want = 0 // no negative zero
	}
	if math.Float64bits(float64(n)) != math.Float64bits(want) {
		t.Fatalf("DecodeJSON(%s) = %v (%#x), ParseFloat %v (%#x)", in, float64(n), math.Float64bits(float64(n)), want, math.Float64bits(want))
	}
}

// TestNumberEncodeMatchesStrconv writes each case's float, and its
// neighbours, as appendNumber does and as strconv's shortest formatting
// does in the same notation.
func TestNumberEncodeMatchesStrconv(t *testing.T) {
	for _, in := range numberCases {
		f, _ := strconv.ParseFloat(in, 64)
		for _, g := range []float64{f, math.Nextafter(f, math.Inf(1)), math.Nextafter(f, math.Inf(-1)), -f} {
			checkEncodeNumber(t, g)
		}
	}
}

// checkEncodeNumber compares appendNumber with strconv for a float in the
// fixed notation's range, where the short path may answer.
func checkEncodeNumber(t *testing.T, f float64) {
	t.Helper()
	if a := math.Abs(f); math.IsNaN(f) || a < 1e-6 || a >= 1e21 || f == math.Trunc(f) {
		return
	}
	want := strconv.FormatFloat(f, 'f', -1, 64)
	if got := string(appendNumber(nil, f)); got != want {
		t.Fatalf("appendNumber(%v) = %s, strconv %s", f, got, want)
	}
}

// FuzzNumberShortPaths checks both short paths against strconv: a decimal
// made of mant with frac digits after the point reads to ParseFloat's
// bits, and both that value and an arbitrary float64 write as strconv's
// shortest digits.
func FuzzNumberShortPaths(f *testing.F) {
	f.Add(uint64(10245), uint8(1), false, math.Float64bits(1024.5))
	f.Add(uint64(3325), uint8(2), true, math.Float64bits(0.1))
	f.Add(uint64(1<<53+1), uint8(1), false, math.Float64bits(0.30000000000000004))
	f.Add(uint64(1), uint8(22), false, math.Float64bits(1e-6))
	f.Fuzz(func(t *testing.T, mant uint64, frac uint8, neg bool, bits uint64) {
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		digits := strconv.FormatUint(mant, 10)
		k := int(frac % 25)
		if len(digits) <= k {
			digits = strings.Repeat("0", k-len(digits)+1) + digits
		}
		in := digits[:len(digits)-k]
		if k > 0 {
			in += "." + digits[len(digits)-k:]
		}
		if neg {
			in = "-" + in
		}
		checkDecodeNumber(t, L, in)
		v, _ := strconv.ParseFloat(in, 64)
		checkEncodeNumber(t, v)
		checkEncodeNumber(t, math.Float64frombits(bits))
	})
}

// TestShortDecimalsSweep compares decimals of 1 to 8 fraction digits with
// strconv, both ways: every one whose digits are 1..20000 for one fraction
// digit, a sample of them for more, and as many near the short writer's
// 2^50 bound and past 2^53.
func TestShortDecimalsSweep(t *testing.T) {
	L := newState(t)
	for k := 1; k <= 8; k++ {
		for _, base := range []uint64{0, 1<<50 - 10000, 1 << 53} {
			for n := base + 1; n <= base+20000; n += 1 + uint64(k-1)*7 {
				s := strconv.FormatUint(n, 10)
				for len(s) <= k {
					s = "0" + s
				}
				in := s[:len(s)-k] + "." + s[len(s)-k:]
				checkDecodeNumber(t, L, in)
				f, _ := strconv.ParseFloat(in, 64)
				checkEncodeNumber(t, f)
				checkEncodeNumber(t, -f)
			}
		}
	}
}
