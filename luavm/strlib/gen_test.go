package strlib

// A small generator of subjects and patterns from fuzzer bytes. Random bytes
// make mostly malformed patterns; building from tokens keeps most inputs
// well formed, so the fuzzer spends its time on matching, while a few
// tokens are deliberately malformed to exercise the error paths.

// genReader hands out the fuzzer's bytes, then zeros.
type genReader struct {
	data []byte
}

func (r *genReader) next() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *genReader) pick(options []string) string {
	return options[int(r.next())%len(options)]
}

const subjectAlphabet = "aab(c) 1_.\x00"

// genSubject builds a subject of at most maxLen bytes.
func (r *genReader) genSubject(maxLen int) string {
	n := int(r.next()) % (maxLen + 1)
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = subjectAlphabet[int(r.next())%len(subjectAlphabet)]
	}
	return string(buf)
}

// Pattern pieces. singleItems may take a quantifier; the others may not.
var (
	singleItems = []string{
		"a", "b", "c", " ", "1", ".", "%a", "%d", "%s", "%w", "%p", "%A", "%l", "%x",
		"%.", "%(", "[ab]", "[^a]", "[a-c]", "[%d_]", "[a%-]", "[]a]", "[^%s]", "_",
	}
	quantifiers = []string{"", "", "*", "+", "-", "?"}
	// allOtherItems are %b, %f, back-references and position captures.
	allOtherItems = []string{"%b()", "%bab", "%f[%w]", "%f[a]", "%f[^a ]", "%1", "()"}
	// balanceItems are the other items gopher-lua matches as Lua 5.1 does.
	balanceItems = []string{"%b()", "%bab"}
	brokenTokens = []string{"%", "[a", "(", ")", "%b", "%f", "%2", "[^"}
)

// genOptions chooses which constructs a generated pattern may use.
type genOptions struct {
	other  []string // items from allOtherItems it may use
	broken bool     // malformed tokens
}

// genPattern builds a pattern of at most maxItems items.
func (r *genReader) genPattern(maxItems int, opt genOptions) string {
	var p []byte
	if r.next()%4 == 0 {
		p = append(p, '^')
	}
	open := 0
	n := int(r.next())%maxItems + 1
	for range n {
		switch k := r.next() % 16; {
		case k < 10:
			p = append(p, r.pick(singleItems)...)
			p = append(p, r.pick(quantifiers)...)
		case k < 12:
			p = append(p, '(')
			open++
		case k < 14 && open > 0:
			p = append(p, ')')
			open--
		case k == 14 && len(opt.other) > 0:
			p = append(p, r.pick(opt.other)...)
		case k == 15 && opt.broken:
			p = append(p, r.pick(brokenTokens)...)
		default:
			p = append(p, r.pick(singleItems)...)
		}
	}
	for ; open > 0; open-- {
		p = append(p, ')')
	}
	if r.next()%4 == 0 {
		p = append(p, '$')
	}
	return string(p)
}
