package config

import (
	"fmt"
	"reflect"
	"strings"
)

// RestartNeeded lists what a reload from old to next would change that
// only a restart may (SPEC §12), each as its message's <what>: a top-level
// key other than actors ("node", "cluster", "storage", "network",
// "session", "log", "tracing", "lua", "match"), "the set of actors",
// "instances of <actor>", or "room of <actor>" (a room block added or
// removed; a changed one applies to rooms created after the reload).
// Where a key is written (its line) is not a change. Empty: the reload may
// go on.
func RestartNeeded(old, next *Config) []string {
	var out []string
	for _, k := range []struct {
		key  string
		a, b any
	}{
		{"node", old.Node, next.Node},
		{"cluster", old.Cluster, next.Cluster},
		{"storage", old.Storage, next.Storage},
		{"network", old.Network, next.Network},
		{"session", old.Session, next.Session},
		{"log", old.Log, next.Log},
		{"tracing", old.Tracing, next.Tracing},
		{"lua", old.Lua, next.Lua},
		{"match", old.Match, next.Match},
	} {
		if !sameIgnoringLines(reflect.ValueOf(k.a), reflect.ValueOf(k.b)) {
			out = append(out, k.key)
		}
	}
	names := func(c *Config) string {
		n := make([]string, len(c.Actors))
		for i := range c.Actors {
			n[i] = c.Actors[i].Name
		}
		return strings.Join(n, ",")
	}
	if names(old) != names(next) {
		return append(out, "the set of actors")
	}
	for i := range old.Actors {
		if a, b := &old.Actors[i], &next.Actors[i]; a.Instances != b.Instances {
			out = append(out, "instances of "+a.Name)
		}
	}
	return append(out, roomRestart(old, next)...)
}

// RestartError is the error of a reload refused for one of RestartNeeded's
// reasons.
func RestartError(what string) error {
	return fmt.Errorf("reload: %s changed; restart to change it", what)
}

// sameIgnoringLines is reflect.DeepEqual for config values, except that a
// struct field named Line, or ending in Line, is not compared.
func sameIgnoringLines(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameIgnoringLines(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if strings.HasSuffix(a.Type().Field(i).Name, "Line") {
				continue
			}
			if !sameIgnoringLines(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return false
		}
		for i := range a.Len() {
			if !sameIgnoringLines(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if bv := b.MapIndex(k); !bv.IsValid() || !sameIgnoringLines(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
