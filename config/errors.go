package config

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem found in a configuration, with the place it was found:
// the file and line, and the actor and route it concerns when there is one.
// Start-up fails on any Error; every one found is reported, not only the first.
type Error struct {
	File  string // the config file as it was named (or a script's path)
	Line  int    // 1-based; 0 when the problem has no single line
	Actor string // the actor's name, empty for node/network/session keys
	Route string // "route 1001 (login)", empty when not about a route
	Msg   string
}

// Error formats the error as "file:line: actor "a": route 1 (n): message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Actor != "" {
		fmt.Fprintf(&b, "actor %q: ", e.Actor)
	}
	if e.Route != "" {
		b.WriteString(e.Route)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one pass, in file order.
type Errors []*Error

// Error joins the messages one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns es as an error, or nil when it is empty (so that a nil
// Errors never becomes a non-nil error interface).
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	es.Sort()
	return es
}

// Sort orders the errors by file, then line, keeping the order of equal ones.
func (es Errors) Sort() {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].File != es[j].File {
			return es[i].File < es[j].File
		}
		return es[i].Line < es[j].Line
	})
}

// RouteLabel names a route in messages: its id, and its name when it has one.
// An id of 0 stands for none (missing, or not an integer); a bad id such as
// -1 is shown as written so the reader can find the route.
func RouteLabel(id int64, name string) string {
	switch {
	case id == 0 && name == "":
		return "route without id"
	case id == 0:
		return fmt.Sprintf("route (%s)", name)
	case name == "":
		return fmt.Sprintf("route %d", id)
	}
	return fmt.Sprintf("route %d (%s)", id, name)
}
