package codec

import (
	"errors"
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
)

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty array", `[]`, `[]`},
		{"empty object", `{}`, `{}`},
		{"array of null", `[null]`, `[null]`},
		{"top-level null", `null`, `null`},
		{"object null", `{"a":null}`, `{"a"=null}`},
		{"scalars", `[true,false,"s",1,-2.5]`, `[true,false,"s",1,-2.5]`},
		{"nested", `{"a":[{"b":[[]]},{}],"c":{"d":"e"}}`, `{"a"=[{"b"=[[]]},{}],"c"={"d"="e"}}`},
		{"whitespace", " \t\r\n{ \"a\" : [ 1 , 2 ] }\n", `{"a"=[1,2]}`},
		{"string keys that look like numbers stay strings", `{"1":"a","2":"b"}`, `{"1"="a","2"="b"}`},
		{"repeated key keeps the last value", `{"a":1,"a":2}`, `{"a"=2}`},

		// Numbers: SPEC's 2^53 rule applies to integer literals only.
		{"2^53 is a number", `9007199254740992`, `9007199254740992`},
		{"-2^53 is a number", `-9007199254740992`, `-9007199254740992`},
		{"2^53+1 is a string", `9007199254740993`, `"9007199254740993"`},
		{"-2^53-1 is a string", `-9007199254740993`, `"-9007199254740993"`},
		{"19 digits", `1234567890123456789`, `"1234567890123456789"`},
		{"20 digits", `[18446744073709551616]`, `["18446744073709551616"]`},
		{"40 digits", `-1000000000000000000000000000000000000000`, `"-1000000000000000000000000000000000000000"`},
		{"big float stays a number", `1e20`, `100000000000000000000`},
		{"big integral with fraction stays a number", `9007199254740993.0`, `9007199254740992`},
		{"fraction", `0.1`, `0.1`},
		{"exponent", `[1E2,1e+2,1e-2,-0.5e1]`, `[100,100,0.01,-5]`},
		{"negative zero becomes 0", `[-0,-0.0,-0e5]`, `[0,0,0]`},
		{"underflow is 0", `1e-400`, `0`},
		{"small ints", `[0,1,1023,1024]`, `[0,1,1023,1024]`},

		// Strings.
		{"escapes", `"\"\\\/\b\f\n\r\t"`, `"\"\\/\b\f\n\r\t"`},
		{"unicode escape", `"\u00e9\u4e2d"`, `"é中"`},
		{"raw utf-8", `"é中😀"`, `"é中😀"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"😀"`},
		{"lone high surrogate is U+FFFD", `"\ud800x"`, "\"\ufffdx\""},
		{"lone low surrogate is U+FFFD", `"\udc00"`, "\"\ufffd\""},
		{"high then non-low", `"\ud800\u0041"`, "\"\ufffdA\""},
		{"reversed pair", `"\udc00\ud800"`, "\"\ufffd\ufffd\""},
		{"NUL escape", `"a\u0000b"`, `"a\x00b"`},
		{"html as is", `"<>&"`, `"<>&"`},
		{"DEL raw", "\"\x7f\"", `"\x7f"`},
		{"escaped key", `{"pay\u006coad":1}`, `{"payload"=1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L := newState(t)
			v, err := DecodeJSON(L, []byte(tt.in))
			if err != nil {
				t.Fatalf("DecodeJSON(%q): %v", tt.in, err)
			}
			if got := show(L, v); got != tt.want {
				t.Errorf("DecodeJSON(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	tests := []struct {
		name, in string
		kind     errKind
		offset   int
		reason   string // a substring of the reason
	}{
		{"empty", ``, kindSyntax, 0, "unexpected end of input"},
		{"only space", `  `, kindSyntax, 2, "unexpected end of input"},
		{"trailing garbage", `{} x`, kindSyntax, 3, `expected end of input, found "x"`},
		{"two values", `1 2`, kindSyntax, 2, "end of input"},
		{"leading zero", `01`, kindSyntax, 0, "leading zero"},
		{"negative leading zero", `[-012]`, kindSyntax, 2, "leading zero"},
		{"plus sign", `+1`, kindSyntax, 0, "a value"},
		{"bare dot", `.5`, kindSyntax, 0, "a value"},
		{"no fraction digits", `1.`, kindSyntax, 2, "digit after '.'"},
		{"no exponent digits", `1e+`, kindSyntax, 3, "exponent"},
		{"lone minus", `-`, kindSyntax, 1, "a digit"},
		{"hex", `0x10`, kindSyntax, 1, "end of input"},
		{"NaN", `NaN`, kindSyntax, 0, "a value"},
		{"trailing comma array", `[1,]`, kindSyntax, 3, "a value"},
		{"trailing comma object", `{"a":1,}`, kindSyntax, 7, "string key"},
		{"missing colon", `{"a" 1}`, kindSyntax, 5, "':'"},
		{"unquoted key", `{a:1}`, kindSyntax, 1, "string key"},
		{"single quotes", `'a'`, kindSyntax, 0, "a value"},
		{"unterminated string", `"abc`, kindSyntax, 0, "unterminated"},
		{"unterminated escape", `"ab\`, kindSyntax, 0, "unterminated"},
		{"unterminated array", `[1,2`, kindSyntax, 4, "end of input"},
		{"bad escape", `"\x"`, kindSyntax, 1, "invalid escape"},
		{"short unicode escape", `"\u12"`, kindSyntax, 1, "invalid escape"},
		{"bad unicode escape after surrogate", `"\ud800\uzzzz"`, kindSyntax, 7, "invalid escape"},
		{"raw control char", "\"a\nb\"", kindSyntax, 2, "control character"},
		{"invalid utf-8", "\"a\xffb\"", kindUTF8, 2, "invalid UTF-8"},
		{"utf-8 surrogate", "\"\xed\xa0\x80\"", kindUTF8, 1, "invalid UTF-8"},
		{"truncated utf-8", "\"\xe4\xb8\"", kindUTF8, 1, "invalid UTF-8"},
		{"utf-8 outside a string", "\xc3\xa9", kindSyntax, 0, "a value"},
		{"truncated literal", `tru`, kindSyntax, 0, "true"},
		{"wrong literal", `nul1`, kindSyntax, 0, "null"},
		{"too deep", deep, kindDepth, MaxDepth, "nesting deeper than 128"},
		{"too deep objects", strings.Repeat(`{"a":`, MaxDepth+1), kindDepth, 5 * MaxDepth, "nesting"},
		{"out of range", `[1e400]`, kindRange, 1, `number "1e400" out of range`},
		{"negative out of range", `-1.5e309`, kindRange, 0, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L := newState(t)
			v, err := DecodeJSON(L, []byte(tt.in))
			if err == nil {
				t.Fatalf("DecodeJSON(%q) = %s, want an error", tt.in, show(L, v))
			}
			if v != lua.LNil {
				t.Errorf("DecodeJSON(%q) value on error = %v, want nil", tt.in, v)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
			}
			if de.kind != tt.kind || de.Offset != tt.offset || !strings.Contains(de.Reason, tt.reason) {
				t.Errorf("DecodeJSON(%q) error = kind %d offset %d %q, want kind %d offset %d containing %q",
					tt.in, de.kind, de.Offset, de.Reason, tt.kind, tt.offset, tt.reason)
			}
			if code, ok := codes.CodeOf(err); !ok || code != codes.DecodeFailed {
				t.Errorf("CodeOf(%v) = %q, %v; want %q", err, code, ok, codes.DecodeFailed)
			}
			if !errors.Is(err, &codes.Error{Code: codes.DecodeFailed}) {
				t.Errorf("errors.Is(%v, decode_failed) = false", err)
			}
			if !strings.HasPrefix(err.Error(), "client_rpc.decode_failed: json: ") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

// TestDecodeDepthLimit checks the boundary: MaxDepth levels decode.
func TestDecodeDepthLimit(t *testing.T) {
	L := newState(t)
	in := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	v, err := DecodeJSON(L, []byte(in))
	if err != nil {
		t.Fatalf("DecodeJSON(%d levels): %v", MaxDepth, err)
	}
	if got := show(L, v); got != in {
		t.Errorf("got %s", got)
	}
}

// TestDecodeDoesNotAlias checks that reusing the input buffer, as a frame
// reader does, leaves decoded strings intact.
func TestDecodeDoesNotAlias(t *testing.T) {
	L := newState(t)
	in := []byte(`{"key":"value","esc":"a\nb","n":123456789012345678901}`)
	v, err := DecodeJSON(L, in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'X'
	}
	want := `{"esc"="a\nb","key"="value","n"="123456789012345678901"}`
	if got := show(L, v); got != want {
		t.Errorf("after overwriting the input: %s, want %s", got, want)
	}
}

// TestDecodeNumbersExact checks that integer literals up to 2^53 are exact.
func TestDecodeNumbersExact(t *testing.T) {
	L := newState(t)
	for _, f := range []float64{1<<53 - 1, -(1<<53 - 1), 4503599627370497, 123456789012345} {
		in := appendNumber(nil, f)
		v, err := DecodeJSON(L, in)
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := v.(lua.LNumber); !ok || float64(n) != f {
			t.Errorf("DecodeJSON(%s) = %v, want %v", in, v, f)
		}
	}
	v, _ := DecodeJSON(L, []byte("-0"))
	if math.Signbit(float64(v.(lua.LNumber))) {
		t.Errorf("-0 decoded with its sign")
	}
}

// TestDecodeScratchReleased checks that an error midway leaves the VM's
// scratch stack empty, so the next decode starts clean.
func TestDecodeScratchReleased(t *testing.T) {
	L := newState(t)
	if _, err := DecodeJSON(L, []byte(`[1,[2,{"a":[3,`)); err == nil {
		t.Fatal("want an error")
	}
	st := stateOf(L)
	if len(st.members) != 0 {
		t.Fatalf("scratch stack holds %d entries after an error", len(st.members))
	}
	for _, m := range st.members[:cap(st.members)] {
		if m.val != nil || m.key != "" {
			t.Fatalf("scratch stack still references %v", m)
		}
	}
	v, err := DecodeJSON(L, []byte(`[1,2]`))
	if err != nil || show(L, v) != "[1,2]" {
		t.Fatalf("next decode = %s, %v", show(L, v), err)
	}
}
