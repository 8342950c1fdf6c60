package config_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
)

// TestSettings: an actor's settings become plain Go data, nested mappings
// and lists included, a YAML null the Null sentinel; absent is nil and {}
// an empty mapping.
func TestSettings(t *testing.T) {
	src := authHead + `    settings:
      turn_seconds: 30
      ratio: 0.75
      big: 1e3
      hex: 0x1F
      name: "Arena"
      date: 2001-12-14
      on: true
      off: False
      nothing: ~
      empty_list: []
      empty_map: {}
      "1": quoted key
      levels:
        - {xp: 100, reward: [gold, null]}
        - {xp: 250, reward: []}
      nested: {a: {b: {c: [1, [2, [3]]]}}}
      secret: !!binary aGVsbG8=
`
	cfg := parseOK(t, src)
	want := map[string]any{
		"turn_seconds": int64(30),
		"ratio":        0.75,
		"big":          1000.0,
		"hex":          int64(31),
		"name":         "Arena",
		"date":         "2001-12-14",
		"on":           true,
		"off":          false,
		"nothing":      config.Null{},
		"empty_list":   []any{},
		"empty_map":    map[string]any{},
		"1":            "quoted key",
		"levels": []any{
			map[string]any{"xp": int64(100), "reward": []any{"gold", config.Null{}}},
			map[string]any{"xp": int64(250), "reward": []any{}},
		},
		"nested": map[string]any{"a": map[string]any{"b": map[string]any{"c": []any{int64(1), []any{int64(2), []any{int64(3)}}}}}},
		"secret": "hello",
	}
	if got := cfg.Actors[0].Settings; !reflect.DeepEqual(got, want) {
		t.Errorf("settings:\n got %#v\nwant %#v", got, want)
	}

	for _, tc := range []struct {
		settings string
		want     map[string]any
	}{
		{"", nil},
		{"    settings: ~\n", nil},
		{"    settings: {}\n", map[string]any{}},
	} {
		cfg := parseOK(t, authHead+tc.settings)
		got := cfg.Actors[0].Settings
		if !reflect.DeepEqual(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%q: settings = %#v, want %#v", tc.settings, got, tc.want)
		}
	}
}

// TestSettingsAnchors: anchors, aliases and merge keys work inside
// settings, and each alias gives its own copy (writing into one changes no
// other).
func TestSettingsAnchors(t *testing.T) {
	src := authHead + `    settings:
      base: &base {hp: 100, tags: &tags [a, b]}
      boss: {<<: *base, hp: 900}
      tags_again: *tags
  - name: room
    script: room.lua
    settings: *base
`
	cfg := parseOK(t, src)
	auth, room := cfg.Actors[0].Settings, cfg.Actors[1].Settings
	if boss := auth["boss"].(map[string]any); boss["hp"] != int64(900) || !reflect.DeepEqual(boss["tags"], []any{"a", "b"}) {
		t.Errorf("boss = %#v, want hp 900 and base's tags", boss)
	}
	if !reflect.DeepEqual(room, map[string]any{"hp": int64(100), "tags": []any{"a", "b"}}) {
		t.Errorf("room settings = %#v", room)
	}
	auth["tags_again"].([]any)[0] = "changed"
	if auth["base"].(map[string]any)["tags"].([]any)[0] != "a" || room["tags"].([]any)[0] != "a" {
		t.Error("aliases share their decoded values")
	}
}

// TestSettingsAliasBomb: aliases inside settings spend the decoder's work
// budget like any other key, so a small file cannot expand into a huge
// settings tree.
func TestSettingsAliasBomb(t *testing.T) {
	var src strings.Builder
	src.WriteString(authHead + "    settings:\n      l0: &l0 [x, x, x, x]\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&src, "      l%d: &l%d [*l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1)
	}
	start := time.Now()
	cfg, errs := config.Parse(file, []byte(src.String()))
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Parse took %v", d)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "values through aliases; decoding stopped") {
		t.Fatalf("errors = %v, want the one budget error", errs)
	}
	if len(cfg.Actors) != 0 {
		t.Errorf("%d actors kept after the walk stopped", len(cfg.Actors))
	}
}
