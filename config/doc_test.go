package config

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// docBase is the file TestConfigDoc sets each documented key in: one of
// every mapping, so that every key has a place to go.
const docBase = `node: {name: gw}
network:
  listeners:
    - {name: game, address: "127.0.0.1:7000", entry_service: auth}
  admin: {address: "127.0.0.1:9100"}
cluster: {nats: "nats://127.0.0.1:4222"}
storage: {buckets: [{name: players}]}
actors:
  - name: auth
    script: auth.lua
    rpc:
      routes:
        - {id: 1, name: login, binding: login}
`

// docRoomBase is docBase with auth a room kind and one queue: the rows of
// docs/rooms.md §2 are set in it, since setting one key of a room block in
// docBase would add the block, which only a restart may (RestartNeeded).
var docRoomBase = strings.Replace(docBase, "    script: auth.lua\n", "    script: auth.lua\n    room: {}\n", 1) +
	"match: {queues: [{name: duel, room: auth}]}\n"

// baseOf is the file a documented key is set in.
func baseOf(key string) string {
	if strings.HasPrefix(key, "actors[].room.") || strings.HasPrefix(key, "match.") || key == "node.queues" {
		return docRoomBase
	}
	return docBase
}

// docRow is one key of docs/config.md.
type docRow struct {
	key, def, change, example string
}

// codeSpan is a table cell that is one code span and nothing else: the
// value in it, and true.
func codeSpan(cell string) (string, bool) {
	if len(cell) > 2 && strings.HasPrefix(cell, "`") && strings.HasSuffix(cell, "`") && strings.Count(cell, "`") == 2 {
		return cell[1 : len(cell)-1], true
	}
	return "", false
}

// readConfigDoc reads docs/config.md's key rows and its removed keys.
func readConfigDoc(t *testing.T) (rows []docRow, removed map[string]bool) {
	t.Helper()
	b, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	removed = map[string]bool{}
	removedItem := regexp.MustCompile("^- `([a-z_.\\[\\]]+)`: ")
	for _, line := range strings.Split(string(b), "\n") {
		if m := removedItem.FindStringSubmatch(line); m != nil {
			removed[m[1]] = true
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) != 9 {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		key, ok := codeSpan(cells[1])
		if !ok {
			continue // the header
		}
		rows = append(rows, docRow{key: key, def: cells[3], change: cells[5], example: cells[6]})
	}
	return rows, removed
}

// acceptedKeys decodes docBase and returns every key the decoder takes
// that holds a value rather than a mapping or a list of them, as
// docs/config.md writes it (list items as []).
func acceptedKeys(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	containers := map[string]bool{}
	index := regexp.MustCompile(`\[\d+\]`)
	mappingHook = func(path string, fs fields) {
		switch path {
		case "the top level":
			path = ""
		case "actor":
			path = "actors[]"
		case "rpc":
			path = "actors[].rpc"
		case "route":
			path = "actors[].rpc.routes[]"
		case "room":
			path = "actors[].room"
		}
		path = index.ReplaceAllString(path, "[]")
		containers[path] = true
		containers[strings.TrimSuffix(path, "[]")] = true
		for k := range fs {
			if path != "" {
				k = path + "." + k
			}
			seen[k] = true
		}
	}
	defer func() { mappingHook = nil }()
	base := strings.Replace(docRoomBase, "{name: game,", "{name: game, tls: {cert_file: c, key_file: k}, protocol: {envelope: idlen},", 1)
	base = strings.Replace(base, "session:", "", 1) + "session: {rate_limit: {per_second: 1}}\nlog: {}\ntracing: {}\nlua: {http: {}}\n"
	if _, errs := Parse("/doc/shield.yaml", []byte(base)); len(errs) > 0 {
		t.Fatalf("the probe config: %v", errs)
	}
	var keys []string
	for k := range seen {
		if !containers[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// withValue is docBase with the key at path set to the YAML value v (a
// list item path goes to the first item).
func withValue(t *testing.T, base, path, v string) []byte {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatal(err)
	}
	var val any
	if err := yaml.Unmarshal([]byte(v), &val); err != nil {
		t.Fatalf("%s: %q is not YAML: %v", path, v, err)
	}
	parts := strings.Split(path, ".")
	var node any = doc
	for i, p := range parts {
		list := strings.HasSuffix(p, "[]")
		p = strings.TrimSuffix(p, "[]")
		m := node.(map[string]any)
		if i == len(parts)-1 {
			m[p] = val
			break
		}
		next, ok := m[p]
		if !ok {
			next = map[string]any{}
			if list {
				next = []any{map[string]any{}}
			}
			m[p] = next
		}
		if list {
			next = next.([]any)[0]
		}
		node = next
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func parseDoc(t *testing.T, src []byte) (*Config, error) {
	t.Helper()
	cfg, errs := Parse("/doc/shield.yaml", src)
	return cfg, errs.Err()
}

// TestConfigDoc: docs/config.md cannot drift from the decoder. Every key
// the decoder takes has a row (or is listed as removed) and every row is
// a key it takes; a default in code font, written out, decodes to the
// same config as leaving it out; an example in code font decodes without
// error; and a row's change column is "restart" exactly when a reload to
// its example is refused (RestartNeeded).
func TestConfigDoc(t *testing.T) {
	rows, removed := readConfigDoc(t)
	documented := map[string]bool{}
	for _, r := range rows {
		if documented[r.key] {
			t.Errorf("docs/config.md: %s has two rows", r.key)
		}
		documented[r.key] = true
	}
	accepted := map[string]bool{}
	for _, k := range acceptedKeys(t) {
		accepted[k] = true
		if !documented[k] && !removed[k] {
			t.Errorf("docs/config.md has no row for %s", k)
		}
	}
	for k := range documented {
		if !accepted[k] {
			t.Errorf("docs/config.md documents %s, which the decoder does not take", k)
		}
	}
	for k := range removed {
		if !accepted[k] {
			t.Errorf("docs/config.md lists %s as removed, but the decoder does not know it", k)
		}
	}

	plain, err := parseDoc(t, []byte(docBase))
	if err != nil {
		t.Fatalf("docBase: %v", err)
	}
	rooms, err := parseDoc(t, []byte(docRoomBase))
	if err != nil {
		t.Fatalf("docRoomBase: %v", err)
	}
	defaults, classified := 0, 0
	for _, r := range rows {
		if r.change != "reload" && r.change != "restart" {
			t.Errorf("%s: change %q, want reload or restart", r.key, r.change)
		}
		base := plain
		if baseOf(r.key) == docRoomBase {
			base = rooms
		}
		if v, ok := codeSpan(r.def); ok {
			defaults++
			got, err := parseDoc(t, withValue(t, baseOf(r.key), r.key, v))
			if err != nil {
				t.Errorf("%s: the documented default %s is refused: %v", r.key, v, err)
			} else if !sameIgnoringLines(reflect.ValueOf(got).Elem(), reflect.ValueOf(base).Elem()) {
				t.Errorf("%s: the documented default %s is not the default: writing it changes the config", r.key, v)
			}
		}
		v, ok := codeSpan(r.example)
		if !ok {
			continue
		}
		got, err := parseDoc(t, withValue(t, baseOf(r.key), r.key, v))
		if err != nil {
			t.Errorf("%s: the example %s is refused: %v", r.key, v, err)
			continue
		}
		if sameIgnoringLines(reflect.ValueOf(got).Elem(), reflect.ValueOf(base).Elem()) {
			continue // the base's own value: nothing to classify
		}
		classified++
		restart := len(RestartNeeded(base, got)) > 0
		if want := map[bool]string{true: "restart", false: "reload"}[restart]; r.change != want {
			t.Errorf("%s: docs/config.md says %s, but a reload to %s is %s", r.key, r.change, v,
				map[bool]string{true: "refused", false: "taken"}[restart])
		}
	}
	// The checks must bite: most rows have a literal default and example.
	if defaults < len(rows)/2 || classified < len(rows)*2/3 {
		t.Errorf("only %d of %d defaults and %d examples checked", defaults, len(rows), classified)
	}
	t.Log(fmt.Sprintf("%d keys, %d defaults and %d examples checked", len(rows), defaults, classified))
}
