package luatest

import (
	"fmt"
	"strings"
)

// ActorYAML is one entry of actors: name.lua, extra keys, and rpc routes
// (YAML list items, or "" for none).
func ActorYAML(name, opts, routes string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n    script: %s.lua\n", name, name)
	for _, line := range strings.Split(strings.TrimSpace(opts), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			b.WriteString("    " + line + "\n")
		}
	}
	if routes != "" {
		b.WriteString("    rpc:\n      routes:" + routes + "\n")
	}
	return b.String()
}

// ConfigYAML is an actors.yaml with one listener, extra top-level YAML and
// the actor entries; the first actor is the listener's entry service.
func ConfigYAML(top string, actors ...string) string {
	return "network:\n  listeners:\n    - {name: game, address: \"127.0.0.1:0\", entry_service: " +
		entryOf(actors) + "}\n" + top + "actors:\n" + strings.Join(actors, "")
}

// entryOf is the name of the first actor entry.
func entryOf(actors []string) string {
	_, rest, _ := strings.Cut(actors[0], "name: ")
	name, _, _ := strings.Cut(rest, "\n")
	return name
}
