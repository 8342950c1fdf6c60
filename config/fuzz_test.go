package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// FuzzParse: no input makes decoding (or the layer-2 merge that runs on
// whatever decoded) panic, and every error names the file and a line
// inside it. The seeds are the example game, every snippet of the error
// table, and the files under testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("..", "configs", "actors.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte(valid))
	f.Add([]byte(strings.Replace(string(example), "envelope: idlen", "envelope: typelen", 1)))
	f.Add([]byte(valid + "  - &a {<<: *a}\n"))
	f.Add([]byte(valid + "  - {<<: [{instances: 2}, {mailbox: 3}], name: b, script: b.lua}\n"))
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Add([]byte(threeActors + "node: {services: [auth, player/1]}\nstorage: {buckets: [{name: p, ttl: 0s}]}\n"))
	f.Add([]byte(authHead + "    settings: {a: [1, {b: ~}], <<: {c: .5}}\nlua: {http: {allow: [\"a.example:443\"]}}\n"))
	for _, tc := range errCases {
		f.Add([]byte(tc.src))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := checkParse(t, data)
		// Split buffers: a prefix of any input is input too (a file cut
		// short by a full disk, an editor that saved half).
		checkParse(t, data[:len(data)/2])

		// Layer 2 runs on whatever layer 1 decoded, errors or not.
		table, _ := descriptor.Merge(cfg)
		edge := table.Edge()
		for _, r := range table.Routes() {
			if r.ID == 0 || r.ID > config.MaxRouteID {
				t.Fatalf("merged route id %d out of range", r.ID)
			}
			if edge.Lookup(r.ID) == nil {
				t.Fatalf("merged route %d missing from the edge", r.ID)
			}
		}
	})
}

// checkParse parses data and checks what must hold for any input.
func checkParse(t *testing.T, data []byte) *config.Config {
	t.Helper()
	const name = "fuzz.yaml"
	cfg, errs := config.Parse(name, data)
	if cfg == nil {
		t.Fatal("Parse returned a nil config")
	}
	lines := yamlLines(data)
	for _, e := range errs {
		if e.File != name || e.Line < 0 || e.Line > lines || e.Msg == "" {
			t.Fatalf("bad error %+v (the input has %d lines)", e, lines)
		}
		if !strings.HasPrefix(e.Error(), name) {
			t.Fatalf("message %q does not start with the file", e.Error())
		}
	}
	if len(errs) == 0 {
		// Only a cluster node may have no listeners (a service node), and
		// then it must host something.
		if len(cfg.Actors) == 0 || (len(cfg.Network.Listeners) == 0 && cfg.Cluster == nil) {
			t.Fatalf("no errors, but %d actors and %d listeners", len(cfg.Actors), len(cfg.Network.Listeners))
		}
		if len(cfg.Network.Listeners) == 0 && cfg.Node.Services != nil && len(cfg.Node.Services) == 0 {
			t.Fatal("no errors, but a node with neither listeners nor services")
		}
		for _, a := range cfg.Actors {
			for _, r := range a.Routes {
				// A room_input route has no binding (docs/rooms.md §2.2):
				// its frames are a room's inputs, not a handler's.
				if r.ID < 1 || r.ID > config.MaxRouteID || (r.Binding == "") != r.RoomInput {
					t.Fatalf("no errors, but route %+v of %s", r, a.Name)
				}
			}
		}
	}
	// The same input gives the same errors: messages are stable enough to
	// be compared by tests and diffed by operators.
	_, again := config.Parse(name, data)
	if again.Error() != errs.Error() {
		t.Fatalf("two runs disagree:\n%v\n----\n%v", errs, again)
	}
	return cfg
}

// yamlLines counts the lines of data as YAML does (\r\n, \r, \n, NEL, LS
// and PS each end a line), plus one for a line after the last break.
func yamlLines(data []byte) int {
	s := strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n").Replace(string(data))
	return strings.Count(s, "\n") + 1
}
