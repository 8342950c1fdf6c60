package luatest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// failRecorder is a testing.TB that keeps what Errorf says instead of
// failing, so that a test can check that a log line would fail its test.
type failRecorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (f *failRecorder) Helper() {}
func (f *failRecorder) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

// TestLogsDuplicateKey: a log line that carries a key twice, at the top or
// nested, fails the world's test once, however often it is read; clean
// lines do not, and records decode as json.Unmarshal would decode them.
func TestLogsDuplicateKey(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		fails      string // a part of the failure; "" for none
	}{
		{"clean", `{"msg":"m","session_id":7,"player_id":"p","arg":{"x":[1,{"y":true}]}}`, ""},
		{"top level", `{"msg":"m","player_id":"p","player_id":"q"}`, `"/player_id"`},
		{"nested", `{"msg":"m","arg":{"a":1,"a":2}}`, `"/arg/a"`},
		{"in an array", `{"msg":"m","arg":[{"k":1},{"k":1,"k":2}]}`, `"/arg/1/k"`},
		{"same key in sibling objects", `{"msg":"m","a":{"k":1},"b":{"k":1}}`, ""},
		{"not an object", `["msg","m"]`, "not a JSON object"},
		{"cut off", `{"msg":"m","a":`, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &failRecorder{TB: t}
			l := &Logs{t: rec}
			fmt.Fprintln(l, tc.line)
			fmt.Fprintln(l, `{"msg":"other"}`)
			recs := l.Records("")
			l.Records("m")
			l.Check()
			if tc.fails == "" {
				if len(rec.errors) != 0 {
					t.Fatalf("failed: %v", rec.errors)
				}
				if len(recs) != 2 || recs[0]["msg"] != "m" {
					t.Fatalf("records %v", recs)
				}
				return
			}
			if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], tc.fails) {
				t.Fatalf("want one failure naming %s, got %q", tc.fails, rec.errors)
			}
		})
	}
}

// TestLogsDecodeLikeUnmarshal: the token reader builds the same values
// json.Unmarshal into a map would (numbers float64, the last of repeated
// keys), so the tests that read records need not change.
func TestLogsDecodeLikeUnmarshal(t *testing.T) {
	m, dups, err := decodeRecord([]byte(`{"n":3,"s":"x","b":false,"z":null,"a":[],"o":{},"k":1,"k":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(dups) != 1 || dups[0] != "/k" {
		t.Fatalf("dups %q", dups)
	}
	if got := fmt.Sprintf("%#v %#v %#v %#v %#v %#v %#v", m["n"], m["s"], m["b"], m["z"], m["a"], m["o"], m["k"]); got !=
		`3 "x" false <nil> []interface {}{} map[string]interface {}{} 2` {
		t.Fatalf("decoded %s", got)
	}
}
