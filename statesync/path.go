package statesync

import "strings"

// Path is the list of keys from the root to a value, 1 to 16 of them in a
// frame.
type Path []string

// Pointer is the path as a JSON Pointer (RFC 6901), the way messages and
// SDK events write it: /players/alice/x, with "~" as "~0" and "/" as "~1".
// The root (no keys) is "".
func (p Path) Pointer() string {
	var b strings.Builder
	for _, k := range p {
		b.WriteByte('/')
		b.WriteString(escapeKey(k))
	}
	return b.String()
}

// escapeKey is one key as a JSON Pointer writes it.
func escapeKey(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// Compare orders paths as frames do (section 7.2): key by key, bytewise,
// a path before its extensions. It returns -1, 0 or +1.
func Compare(a, b Path) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// shared is how many leading keys a and b have in common.
func shared(a, b Path) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// hasPrefix reports whether p starts with prefix (or is it).
func hasPrefix(p, prefix Path) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i, k := range prefix {
		if p[i] != k {
			return false
		}
	}
	return true
}
