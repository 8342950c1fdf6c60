package codec

import (
	"errors"
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
)

func TestAppendJSON(t *testing.T) {
	tests := []struct {
		name, lua, want string
	}{
		{"empty table is an object", `{}`, `{}`},
		{"marked empty table is an array", `array({})`, `[]`},
		{"sequence", `{1, 2, 3}`, `[1,2,3]`},
		{"sequence with explicit keys", `{[1]="a", [2]="b"}`, `["a","b"]`},
		{"marked array ignores other keys", `(function() local a = array({1, 2}); a.x = 1; return a end)()`, `[1,2]`},
		{"marked array hole is null", `(function() local a = array({}); a[3] = "c"; a[1] = "a"; return a end)()`, `["a",null,"c"]`},
		{"sparse table is an object", `{[1]="a", [3]="c"}`, `{"1":"a","3":"c"}`},
		{"sequence plus string key is an object", `{10, 20, x=1}`, `{"1":10,"2":20,"x":1}`},
		{"sequence from 0 is an object", `{[0]="z", [1]="a"}`, `{"0":"z","1":"a"}`},
		{"negative and large integer keys", `{[-1]=1, [2^40]=2}`, `{"-1":1,"1099511627776":2}`},
		{"integer float key", `{[2.0]=true}`, `{"2":true}`},
		{"keys sorted bytewise", `{b=1, a=2, B=3, ["é"]=4, aa=5, [10]=6, [9]=7}`, `{"10":6,"9":7,"B":3,"a":2,"aa":5,"b":1,"é":4}`},
		{"nested", `{players={{name="a", legs={}}, {name="b", legs=array({})}}}`, `{"players":[{"legs":{},"name":"a"},{"legs":[],"name":"b"}]}`},
		{"null in object and array", `{a=null, b={null, 1}}`, `{"a":null,"b":[null,1]}`},
		{"top-level null", `null`, `null`},
		{"top-level nil", `nil`, `null`},
		{"booleans", `{true, false}`, `[true,false]`},

		// Numbers.
		{"integer", `3`, `3`},
		{"integral float", `3.0`, `3`},
		{"fraction", `0.1`, `0.1`},
		{"negative", `-2.5`, `-2.5`},
		{"negative zero", `-0.0`, `0`},
		{"negative zero computed", `0 * -1`, `0`},
		{"2^53", `2^53`, `9007199254740992`},
		{"1e20 in plain digits", `1e20`, `100000000000000000000`},
		{"2^64 in shortest plain digits", `2^64`, `18446744073709552000`},
		{"1e21 with exponent", `1e21`, `1e+21`},
		{"-1e21 with exponent", `-1e21`, `-1e+21`},
		{"tiny", `1e-7`, `1e-7`},
		{"small", `0.000001`, `0.000001`},
		{"shortest round trip", `1/3`, `0.3333333333333333`},
		{"max float", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"min subnormal", `5e-324`, `5e-324`},

		// Strings.
		{"html not escaped", `"<a href='x'>&amp;</a>"`, `"<a href='x'>&amp;</a>"`},
		{"quotes and backslash", `'say "hi" \\ bye'`, `"say \"hi\" \\ bye"`},
		{"control chars", `"\0\1\8\9\10\12\13\31\127"`, `"\u0000\u0001\b\t\n\f\r\u001f` + "\x7f" + `"`},
		{"unicode as is", `"é中😀\226\128\168"`, "\"é中😀\u2028\""},
		{"empty string", `""`, `""`},
		{"escaped key", `{["a\"b"]=1}`, `{"a\"b":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L := newState(t)
			v := eval(t, L, tt.lua)
			got, err := AppendJSON(nil, L, v)
			if err != nil {
				t.Fatalf("AppendJSON(%s): %v", tt.lua, err)
			}
			if string(got) != tt.want {
				t.Errorf("AppendJSON(%s) = %s, want %s", tt.lua, got, tt.want)
			}
		})
	}
}

func TestAppendJSONErrors(t *testing.T) {
	tests := []struct {
		name, lua, want string
	}{
		{"function", `{a={b=print}}`, `json encode: /a/b: a function cannot be encoded`},
		{"function in array", `{players={{name="a"}, {name="b"}, {name=print}}}`, `json encode: /players/2/name: a function cannot be encoded`},
		{"thread", `{co=coroutine.create(function() end)}`, `json encode: /co: a thread cannot be encoded`},
		{"foreign userdata", `{u=newproxy and newproxy() or ud}`, `json encode: /u: userdata cannot be encoded`},
		{"invalid utf-8", `{players={{}, {}, {name="\255"}}}`, `json encode: /players/2/name: invalid UTF-8 in string "\xff"`},
		{"invalid utf-8 key", `{a={["\255"]=1}}`, `json encode: /a: invalid UTF-8 in key "\xff"`},
		{"NaN", `{x=0/0}`, `json encode: /x: NaN is not a JSON number`},
		{"+Inf", `{1, 2, 1/0}`, `json encode: /2: +Inf is not a JSON number`},
		{"-Inf at the top", `-1/0`, `json encode: /: -Inf is not a JSON number`},
		{"boolean key", `{[true]=1}`, `json encode: /: a boolean key cannot be encoded`},
		{"table key", `{t={[{}]=1}}`, `json encode: /t: a table key cannot be encoded`},
		{"function key", `{[print]=1}`, `json encode: /: a function key cannot be encoded`},
		{"fractional key", `{[1.5]=1}`, `json encode: /: number key 1.5 is not an integer below 1e21`},
		{"huge key", `{[1e21]=1}`, `json encode: /: number key 1e+21 is not an integer below 1e21`},
		{"number and string key collide", `{[1]="n", ["1"]="s"}`, `json encode: /: key "1" is both a number and a string key`},
		{"cycle", `(function() local t = {a={}}; t.a.b = t; return t end)()`, `json encode: /a/b: table contains itself`},
		{"self cycle in array", `(function() local t = {}; t[1] = t; return t end)()`, `json encode: /0: table contains itself`},
		{"pointer escaping", `{["a/b"]={["c~d"]=print}}`, `json encode: /a~1b/c~0d: a function cannot be encoded`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L := newState(t)
			L.SetGlobal("ud", L.NewUserData())
			v := eval(t, L, tt.lua)
			dst := []byte("prefix")
			got, err := AppendJSON(dst, L, v)
			if err == nil {
				t.Fatalf("AppendJSON(%s) = %s, want an error", tt.lua, got)
			}
			if err.Error() != tt.want {
				t.Errorf("AppendJSON(%s) error = %q, want %q", tt.lua, err, tt.want)
			}
			var ee *EncodeError
			if !errors.As(err, &ee) {
				t.Errorf("error %T is not an *EncodeError", err)
			}
			if _, ok := codes.CodeOf(err); ok {
				t.Errorf("encode error %v carries a client code", err)
			}
			if string(got) != "prefix" {
				t.Errorf("dst after error = %q, want it unchanged", got)
			}
			if st := stateOf(L); len(st.members) != 0 || len(st.ancestors) != 0 {
				t.Errorf("scratch not released: %d members, %d ancestors", len(st.members), len(st.ancestors))
			}
		})
	}
}

func TestAppendJSONChannel(t *testing.T) {
	L := newState(t)
	_, err := AppendJSON(nil, L, lua.LChannel(make(chan lua.LValue)))
	if err == nil || err.Error() != "json encode: /: a channel cannot be encoded" {
		t.Errorf("channel: %v", err)
	}
}

// TestAppendJSONNullFromAnotherVM checks that shield.null is per VM.
func TestAppendJSONNullFromAnotherVM(t *testing.T) {
	L1, L2 := newState(t), newState(t)
	if Null(L1) == Null(L2) {
		t.Fatal("two VMs share one null")
	}
	if _, err := AppendJSON(nil, L1, Null(L2)); err == nil {
		t.Error("another VM's null encoded as null")
	}
}

func TestAppendJSONDepth(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat("{", n) + strings.Repeat("}", n)
	}
	L := newState(t)
	got, err := AppendJSON(nil, L, eval(t, L, nest(MaxDepth)))
	if err != nil {
		t.Fatalf("%d levels: %v", MaxDepth, err)
	}
	// {{}} is an array of one object: the outer tables are sequences.
	if want := strings.Repeat("[", MaxDepth-1) + "{}" + strings.Repeat("]", MaxDepth-1); string(got) != want {
		t.Errorf("%d levels = %s", MaxDepth, got)
	}
	_, err = AppendJSON(nil, L, eval(t, L, nest(MaxDepth+1)))
	if err == nil || !strings.HasSuffix(err.Error(), ": nesting deeper than 128") {
		t.Errorf("%d levels: %v, want the depth error", MaxDepth+1, err)
	}
}

func TestAppendJSONAppends(t *testing.T) {
	L := newState(t)
	got, err := AppendJSON([]byte("x="), L, eval(t, L, `{a=1}`))
	if err != nil || string(got) != `x={"a":1}` {
		t.Errorf("got %q, %v", got, err)
	}
}

// TestAppendJSONRawAccess checks that metamethods are not consulted: a proxy
// table with __index encodes as what it holds, not what it shows.
func TestAppendJSONRawAccess(t *testing.T) {
	L := newState(t)
	v := eval(t, L, `setmetatable({own=1}, {__index=function() return 2 end, __len=function() return 5 end})`)
	got, err := AppendJSON(nil, L, v)
	if err != nil || string(got) != `{"own":1}` {
		t.Errorf("got %s, %v", got, err)
	}
}

// TestAppendNumberMatchesStdlib checks the number form against
// encoding/json's float64 output, which it is defined to equal (but for -0).
func TestAppendNumberMatchesStdlib(t *testing.T) {
	for _, f := range []float64{
		1, -1, 0.1, 1e-6, 9.99e-7, 1e-7, 123456789, 1e20, 1e21, 999999999999999999999.0,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 1 << 53, 1<<53 + 2, 1 << 63, 1 << 64,
		-1.5e-300, 3.14159, 2.5e15, 1e300,
	} {
		want := stdNumber(t, f)
		if got := string(appendNumber(nil, f)); got != want {
			t.Errorf("appendNumber(%v) = %s, encoding/json writes %s", f, got, want)
		}
	}
}
