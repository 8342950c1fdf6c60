package gateway

import (
	"net/http"
	"testing"
)

// TestOriginAllowed: allowed_origins compares whole Origin values exactly;
// no header passes; an empty list checks nothing.
func TestOriginAllowed(t *testing.T) {
	list := []string{"https://game.example", "http://127.0.0.1:9100"}
	for _, tc := range []struct {
		allowed []string
		origins []string
		want    bool
	}{
		{list, nil, true},
		{list, []string{"https://game.example"}, true},
		{list, []string{"http://127.0.0.1:9100"}, true},
		{list, []string{"https://game.example/"}, false},
		{list, []string{"https://GAME.example"}, false},
		{list, []string{"https://game.example:443"}, false},
		{list, []string{"http://game.example"}, false},
		{list, []string{"null"}, false},
		{list, []string{""}, false},
		{list, []string{"https://game.example", "https://evil.example"}, false},
		{nil, []string{"https://evil.example"}, true},
		{nil, nil, true},
	} {
		h := http.Header{}
		for _, o := range tc.origins {
			h.Add("Origin", o)
		}
		if got := originAllowed(tc.allowed, h); got != tc.want {
			t.Errorf("allowed %v, Origin %q: %v, want %v", tc.allowed, tc.origins, got, tc.want)
		}
	}
}

// TestHasToken: Connection and Upgrade are comma lists, case-insensitive.
func TestHasToken(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{[]string{"Upgrade"}, true},
		{[]string{"keep-alive, Upgrade"}, true},
		{[]string{"keep-alive", "upgrade"}, true},
		{[]string{"keep-alive"}, false},
		{[]string{"upgraded"}, false},
		{nil, false},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("Connection", v)
		}
		if got := hasToken(h, "Connection", "upgrade"); got != tc.want {
			t.Errorf("Connection %q: %v, want %v", tc.values, got, tc.want)
		}
	}
}
