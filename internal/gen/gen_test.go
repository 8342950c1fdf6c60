package gen_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/internal/gen"
	"github.com/shieldrpc/shield/internal/testutil"
)

// update rewrites the golden files and the example game's committed stubs
// with what the generator writes now:
//
//	go test ./internal/gen -update
var update = flag.Bool("update", false, "rewrite internal/gen/testdata/*.txt and the example game's stubs")

func TestMain(m *testing.M) { os.Exit(testutil.CheckGoroutinesMain(m, "gen")) }

// section is one "-- name --" part of a golden file.
type section struct {
	name string
	body string
}

// parseGolden splits a golden file into its sections: the inputs
// (actors.yaml, schemas/*.json, options) and the expected outputs
// (routes.ts, routes.go), in the file's order.
func parseGolden(t testing.TB, data string) []section {
	t.Helper()
	var out []section
	for _, line := range strings.SplitAfter(data, "\n") {
		if name, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "-- "); ok && strings.HasSuffix(name, " --") {
			out = append(out, section{name: strings.TrimSuffix(name, " --")})
			continue
		}
		if len(out) == 0 {
			if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#") {
				t.Fatalf("text before the first section: %q", line)
			}
			continue
		}
		out[len(out)-1].body += line
	}
	return out
}

// TestGolden runs every testdata/*.txt: a config (actors.yaml), its schema
// files (schemas/NAME.json) and options (a "body: protobuf" line), then
// the TypeScript and Go stubs the generator must write for it. The files
// of testdata/cs/ hold the C# stubs (Routes.cs) instead (a folder of their
// own: clients/ts reads every testdata/*.txt for its routes.ts section).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	csFiles, _ := filepath.Glob(filepath.Join("testdata", "cs", "*.txt"))
	files = append(files, csFiles...)
	if err != nil || len(files) == 0 || len(csFiles) == 0 {
		t.Fatalf("no golden files in testdata (%v)", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			secs := parseGolden(t, string(data))
			dir := t.TempDir()
			var o gen.Options
			var header string
			if i := bytes.Index(data, []byte("-- ")); i > 0 {
				header = string(data[:i])
			}
			langs, names := []string{"ts", "go"}, []string{"routes.ts", "routes.go"}
			if filepath.Base(filepath.Dir(path)) == "cs" {
				langs, names = []string{"cs"}, []string{"Routes.cs"}
			}
			var kept []section
			for _, s := range secs {
				switch {
				case s.name == "routes.ts" || s.name == "routes.go" || s.name == "Routes.cs":
					continue
				case s.name == "options":
					for _, l := range strings.Split(strings.TrimSpace(s.body), "\n") {
						k, v, _ := strings.Cut(l, ":")
						switch strings.TrimSpace(k) {
						case "body":
							o.Body = strings.TrimSpace(v)
						case "package":
							o.Package = strings.TrimSpace(v)
						default:
							t.Fatalf("unknown option %q", l)
						}
					}
				default:
					testutil.WriteFile(t, filepath.Join(dir, filepath.FromSlash(s.name)), s.body)
				}
				kept = append(kept, s)
			}
			if _, err := os.Stat(filepath.Join(dir, "schemas")); err == nil {
				o.SchemasDir = filepath.Join(dir, "schemas")
			}
			o.Source = "actors.yaml"
			got := map[string]string{}
			for _, lang := range langs {
				o.Lang = lang
				out := generate(t, filepath.Join(dir, "actors.yaml"), o)
				got[out.Name] = string(out.Data)
			}
			if *update {
				var b strings.Builder
				b.WriteString(header)
				for _, s := range kept {
					b.WriteString("-- " + s.name + " --\n" + s.body)
				}
				for _, name := range names {
					b.WriteString("-- " + name + " --\n" + got[name])
				}
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, s := range secs {
				if want, ok := got[s.name]; ok {
					delete(got, s.name)
					if s.body != want {
						t.Errorf("%s: %s differs (go test ./internal/gen -update rewrites it)\n--- got\n%s--- want\n%s", path, s.name, want, s.body)
					}
				}
			}
			for name := range got {
				t.Errorf("%s: no %s section", path, name)
			}
		})
	}
}

// generate loads and merges the config at file, then generates one file.
func generate(t testing.TB, file string, o gen.Options) gen.Output {
	t.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	table, errs := descriptor.Merge(cfg)
	if len(errs) > 0 {
		t.Fatalf("merge: %v", errs)
	}
	outs, err := gen.Generate(cfg, table, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 {
		t.Fatalf("%d files, want 1", len(outs))
	}
	return outs[0]
}

// TestExampleStubs regenerates the example game's committed stubs, as
//
//	go run ./cmd/gateway gen -c configs/actors.yaml -schemas configs/schemas -lang ts -o clients/ts/examples/game
//	go run ./cmd/gateway gen -c configs/actors.yaml -schemas configs/schemas -lang go -o client/examples/game
//	go run ./cmd/gateway gen -c configs/actors.yaml -schemas configs/schemas -lang cs -package Shield.Examples.Game -o clients/csharp/Samples~/Game
//
// write them, and fails when a committed copy is stale.
func TestExampleStubs(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, c := range []struct{ lang, pkg, dir string }{
		{"ts", "game", filepath.Join(root, "clients", "ts", "examples", "game")},
		{"go", "game", filepath.Join(root, "client", "examples", "game")},
		{"cs", "Shield.Examples.Game", filepath.Join(root, "clients", "csharp", "Samples~", "Game")},
	} {
		out := generate(t, filepath.Join(root, "configs", "actors.yaml"), gen.Options{
			Lang: c.lang, Package: c.pkg, SchemasDir: filepath.Join(root, "configs", "schemas"), Source: "configs/actors.yaml",
		})
		path := filepath.Join(c.dir, out.Name)
		if *update {
			if err := os.MkdirAll(c.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, out.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		committed, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./internal/gen -update writes it)", err)
		}
		if !bytes.Equal(committed, out.Data) {
			t.Errorf("%s is stale: the example game's routes or schemas changed (go test ./internal/gen -update rewrites it)", path)
		}
	}
}
