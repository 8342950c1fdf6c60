package codec

import (
	"strings"
	"testing"
)

func TestUnwrapLegacy(t *testing.T) {
	tests := []struct {
		name, body string
		want       string // the payload when unwrapped
		ok         bool
	}{
		{"route and payload", `{"route":"move","payload":{"x":1}}`, `{"x":1}`, true},
		{"route_id and payload", `{"payload":[1,2],"route_id":3001}`, `[1,2]`, true},
		{"both route fields", `{"route":"move","route_id":3001,"payload":"s"}`, `"s"`, true},
		{"route fields of any type", `{"route":null,"route_id":{"a":[]},"payload":1}`, `1`, true},
		{"whitespace kept out", " { \"route\" : 1 , \"payload\" :\n {\"a\": 1} \n} ", `{"a": 1}`, true},
		{"null payload", `{"payload":null,"route":"x"}`, `null`, true},
		{"escaped key", `{"pay\u006coad":1,"route":"x"}`, `1`, true},

		{"no route field", `{"payload":{"x":1}}`, "", false},
		{"no payload", `{"route":"move"}`, "", false},
		{"other key", `{"route":"move","payload":1,"type":"request"}`, "", false},
		{"other key first", `{"x":1,"payload":1,"route":"m"}`, "", false},
		{"repeated payload", `{"route":"m","payload":1,"payload":2}`, "", false},
		{"repeated route", `{"route":"m","route":"n","payload":2}`, "", false},
		{"empty object", `{}`, "", false},
		{"array", `[{"route":"m","payload":1}]`, "", false},
		{"not json", `hello`, "", false},
		{"empty", ``, "", false},
		{"trailing comma", `{"route":"m","payload":1,}`, "", false},
		{"trailing garbage", `{"route":"m","payload":1} x`, "", false},
		{"invalid payload", `{"route":"m","payload":[1,}`, "", false},
		{"invalid utf-8 in route", "{\"route\":\"\xff\",\"payload\":1}", "", false},
		{"unterminated", `{"route":"m","payload":1`, "", false},
		{"key case matters", `{"Route":"m","payload":1}`, "", false},
		{"too deep payload", `{"route":"m","payload":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			got, ok := UnwrapLegacy(body)
			if ok != tt.ok {
				t.Fatalf("UnwrapLegacy(%q) ok = %v, want %v", tt.body, ok, tt.ok)
			}
			want := tt.want
			if !ok {
				want = tt.body
			}
			if string(got) != want {
				t.Errorf("UnwrapLegacy(%q) = %q, want %q", tt.body, got, want)
			}
			if ok && cap(got) != len(got) {
				t.Errorf("payload capacity %d reaches past its end (%d)", cap(got), len(got))
			}
		})
	}
}

func TestUnwrapLegacyDepthBoundary(t *testing.T) {
	// The wrapper object is one level, so the payload may nest MaxDepth-1.
	n := MaxDepth - 1
	payload := strings.Repeat("[", n) + strings.Repeat("]", n)
	got, ok := UnwrapLegacy([]byte(`{"route":"m","payload":` + payload + `}`))
	if !ok || string(got) != payload {
		t.Errorf("payload %d deep: ok %v", n, ok)
	}
}
