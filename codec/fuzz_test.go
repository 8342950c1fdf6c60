package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"testing"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

var fuzzSeeds = []string{
	moveMessage,
	`[]`, `{}`, `[null]`, `null`, `true`, `"s"`, `0`, `-0`, `-0.0e-5`,
	`9007199254740992`, `9007199254740993`, `-9007199254740993`, `18446744073709551616`,
	`1e20`, `1e21`, `1e400`, `1e-400`, `0.1`, `5e-324`, `1.7976931348623157e308`,
	`{"a":[1,{"b":null}],"c":"\u00e9\ud83d\ude00\ud800"}`,
	`{"a":1,"a":2}`, `{"1":1,"2":2}`, `[1,]`, `{"a" 1}`, `01`, `"\x"`, "\"\xff\"",
	"[\"a\u2028<>&\"]", ` [ 1 , 2 ] `, `{"route":"m","payload":{"x":1}}`,
}

// FuzzDecodeJSON checks that DecodeJSON never panics, accepts what
// encoding/json accepts (on valid UTF-8, outside the depth and number
// range limits it adds), builds the same value as encoding/json, and that
// decode -> encode -> decode is stable.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()

		v1, err := DecodeJSON(L, data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if de.Offset < 0 || de.Offset > len(data) {
				t.Fatalf("offset %d outside the input (%d bytes)", de.Offset, len(data))
			}
			if de.kind == kindUTF8 && utf8.Valid(data) {
				t.Fatalf("UTF-8 error on valid UTF-8: %v", err)
			}
			if utf8.Valid(data) && de.kind == kindSyntax && json.Valid(data) {
				t.Fatalf("rejected what encoding/json accepts: %v", err)
			}
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("accepted invalid UTF-8")
		}
		if !json.Valid(data) {
			t.Fatalf("accepted what encoding/json rejects: %s", show(L, v1))
		}
		checkSameAsStdlib(t, L, data, v1)

		b1, err := AppendJSON(nil, L, v1)
		if err != nil {
			t.Fatalf("decoded value does not encode: %v", err)
		}
		if !json.Valid(b1) {
			t.Fatalf("encoded invalid JSON %q", b1)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b1); err != nil || !bytes.Equal(compact.Bytes(), b1) {
			t.Fatalf("output not compact: %q", b1)
		}
		v2, err := DecodeJSON(L, b1)
		if err != nil {
			t.Fatalf("output %q does not decode: %v", b1, err)
		}
		if !sameValue(L, v1, v2, true) {
			t.Fatalf("round trip changed the value:\n in  %s\n out %s", show(L, v1), show(L, v2))
		}
		// After one round trip, big integral numbers have become strings;
		// from there on encoding is a fixed point.
		b2, err := AppendJSON(nil, L, v2)
		if err != nil {
			t.Fatal(err)
		}
		v3, err := DecodeJSON(L, b2)
		if err != nil {
			t.Fatal(err)
		}
		b3, err := AppendJSON(nil, L, v3)
		if err != nil || !bytes.Equal(b2, b3) {
			t.Fatalf("encoding is not stable: %q then %q (%v)", b2, b3, err)
		}
	})
}

// checkSameAsStdlib compares v with encoding/json's reading of data.
func checkSameAsStdlib(t *testing.T, L *lua.LState, data []byte, v lua.LValue) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var std any
	if err := dec.Decode(&std); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("encoding/json sees more input: %v", err)
	}
	if !sameAsStd(L, v, std) {
		b, _ := json.Marshal(std)
		t.Fatalf("decoded %s, encoding/json decoded %s", show(L, v), b)
	}
}

func sameAsStd(L *lua.LState, v lua.LValue, std any) bool {
	switch s := std.(type) {
	case nil:
		return IsNull(L, v)
	case bool:
		b, ok := v.(lua.LBool)
		return ok && bool(b) == s
	case string:
		str, ok := v.(lua.LString)
		return ok && string(str) == s
	case json.Number:
		switch n := v.(type) {
		case lua.LString: // a big integer literal, exactly as written
			f, err := strconv.ParseFloat(string(s), 64)
			return string(n) == string(s) && (err != nil || math.Abs(f) >= maxSafeInteger)
		case lua.LNumber:
			f, err := strconv.ParseFloat(string(s), 64)
			// -0 is decoded as 0 on purpose.
			return err == nil && f == float64(n) && (f != 0 || !math.Signbit(float64(n)))
		}
		return false
	case []any:
		t, ok := v.(*lua.LTable)
		if !ok || !IsArray(L, t) || t.Len() != len(s) || countKeys(t) != len(s) {
			return false
		}
		for i, e := range s {
			if !sameAsStd(L, t.RawGetInt(i+1), e) {
				return false
			}
		}
		return true
	case map[string]any:
		t, ok := v.(*lua.LTable)
		if !ok || t.Metatable != lua.LNil || countKeys(t) != len(s) {
			return false
		}
		for k, e := range s {
			if !sameAsStd(L, t.RawGetString(k), e) {
				return false
			}
		}
		return true
	}
	return false
}

func countKeys(t *lua.LTable) int {
	n := 0
	t.ForEach(func(lua.LValue, lua.LValue) { n++ })
	return n
}

// sameValue compares two decoded values. With bigToString, a number in a
// that is integral and above 2^53 may be b's decimal string: the one change
// SPEC's rule makes to a value encoded and decoded again.
func sameValue(L *lua.LState, a, b lua.LValue, bigToString bool) bool {
	switch a := a.(type) {
	case lua.LNumber:
		if s, ok := b.(lua.LString); ok && bigToString {
			f := float64(a)
			return f == math.Trunc(f) && math.Abs(f) > maxSafeInteger && string(appendNumber(nil, f)) == string(s)
		}
		return a == b
	case *lua.LTable:
		bt, ok := b.(*lua.LTable)
		if !ok || IsArray(L, a) != IsArray(L, bt) || countKeys(a) != countKeys(bt) {
			return false
		}
		same := true
		a.ForEach(func(k, v lua.LValue) {
			same = same && sameValue(L, v, bt.RawGet(k), bigToString)
		})
		return same
	default:
		return a == b
	}
}

// FuzzUnwrapLegacy checks UnwrapLegacy against a reference built on
// encoding/json's tokenizer.
func FuzzUnwrapLegacy(f *testing.F) {
	for _, s := range []string{
		`{"route":"move","payload":{"x":1}}`, `{"payload":[1,2],"route_id":3001}`,
		`{"route":"m","route_id":1,"payload":null}`, ` { "route" : 1 , "payload" : "x" } `,
		`{"pay\u006coad":1,"route":"x"}`, `{"payload":1}`, `{"route":"m","payload":1,"x":2}`,
		`{"route":"m","payload":1,"payload":2}`, `{"route":"m","payload":1,}`, `{}`, `[]`,
		`{"route":"m","payload":[1,}`, moveMessage,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := UnwrapLegacy(body)
		want, wantOK := refUnwrap(body)
		if !ok {
			if len(got) != len(body) || len(body) > 0 && &got[0] != &body[0] {
				t.Fatalf("refused but did not return the body")
			}
			if wantOK && nesting(body) <= MaxDepth {
				t.Fatalf("refused a wrapper; the reference unwraps %q", want)
			}
			return
		}
		if !wantOK {
			t.Fatalf("unwrapped %q; the reference refuses", got)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("payload %q, the reference says %q", got, want)
		}
		if cap(got) != len(got) {
			t.Fatalf("payload capacity reaches past it")
		}
	})
}

// refUnwrap is UnwrapLegacy's rule spelled with encoding/json.
func refUnwrap(body []byte) ([]byte, bool) {
	if !utf8.Valid(body) || !json.Valid(body) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	seen := map[string]bool{}
	var payload json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key := tok.(string)
		if seen[key] || (key != "payload" && key != "route" && key != "route_id") {
			return nil, false
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		if key == "payload" {
			payload = raw
		}
	}
	if !seen["payload"] || !(seen["route"] || seen["route_id"]) {
		return nil, false
	}
	return payload, true
}

// nesting returns how deeply arrays and objects nest in valid JSON.
func nesting(data []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
