package codec

import (
	"math"
	"strconv"
)

// Short decimals both ways without strconv's general algorithms. Game
// bodies are full of numbers like 1024.5 and -33.25: a handful of digits
// and a few after the point. For those, the exact answer is one division
// of two exactly representable numbers, which IEEE 754 rounds correctly;
// strconv reaches the same bits (or digits) through its general path,
// about 25 ns a number to read and 40 to write.

// pow10 holds the powers of ten that are exact float64s (up to 10^22).
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// exactDecimal returns mant / 10^frac, negated when neg, when that
// quotient is what strconv.ParseFloat returns for the decimal: when mant
// and 10^frac are both exact float64s, their quotient rounded once is the
// correctly rounded value of the decimal, which is ParseFloat's result.
func exactDecimal(mant uint64, frac int, neg bool) (float64, bool) {
	if mant > 1<<53 || frac >= len(pow10) {
		return 0, false
	}
	f := float64(mant) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// shortFracDigits is the most fraction digits appendShortDecimal tries.
const shortFracDigits = 8

// appendShortDecimal appends f as strconv.AppendFloat(b, f, 'f', -1, 64)
// does, when f (not integral, 1e-6 <= |f| < 1e21) has a decimal of at most
// shortFracDigits fraction digits that reads back as f, and reports false
// (b unchanged) otherwise.
//
// Why it is exact. For k = 1, 2, ... it takes n, the integer nearest to
// |f|·10^k, and accepts the first k where n/10^k reads back as |f|
// (float64(n)/10^k, one correct rounding, is what parsing that decimal
// gives). Holding n below 2^50 keeps |f|'s rounding interval (one ulp wide)
// under a quarter of 10^-k, so at most one k-digit decimal lies in it, and
// the product's own rounding (at most 2^-4) cannot move n to a neighbour
// that would read back. So the first k that reads back is the fewest
// fraction digits, hence the fewest significant digits, of any decimal in
// the interval, and its decimal is the only one that short: the digits
// strconv's shortest formatting finds.
func appendShortDecimal(b []byte, f float64) ([]byte, bool) {
	a := math.Abs(f)
	for k := 1; k <= shortFracDigits; k++ {
		p := a * pow10[k]
		if p >= 1<<50 {
			return b, false
		}
		n := math.Round(p)
		if n/pow10[k] != a {
			continue
		}
		if f < 0 {
			b = append(b, '-')
		}
		u, scale := uint64(n), uint64(pow10[k])
		b = strconv.AppendUint(b, u/scale, 10)
		b = append(b, '.')
		frac := u % scale
		for d := scale / 10; d > 0; d /= 10 { // k digits, leading zeros kept
			b = append(b, byte('0'+frac/d%10))
		}
		return b, true
	}
	return b, false
}
