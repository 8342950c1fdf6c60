package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/shieldrpc/shield/internal/gen"
)

// genCmd writes typed client stubs for the config's route table (layers 1
// and 2 only, as `gateway routes`: no VM is spawned).
func genCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("c", defaultConfig, "configuration `FILE`")
	lang := fs.String("lang", "", "`ts` (imports @shieldrpc/client), go (imports github.com/shieldrpc/shield/client) or cs (the C# client, clients/csharp)")
	out := fs.String("o", "", "output `DIR` (created if missing)")
	pkg := fs.String("package", "", "Go package `name`; default the output folder's name (cs: the C# namespace, default Shield.Routes)")
	schemas := fs.String("schemas", "", "JSON Schemas `DIR`; default the config's network.schemas_dir")
	body := fs.String("body", "", "body codec of the stubs: json, protobuf or raw; default the first listener's")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *lang == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: gateway gen [-c FILE] -lang ts|go|cs -o DIR [-package NAME] [-schemas DIR] [-body json|protobuf|raw]")
		return 2
	}
	cfg, table, ok := loadTable(*file, stderr)
	if !ok {
		return 1
	}
	o := gen.Options{Lang: *lang, Package: *pkg, SchemasDir: *schemas, Body: *body, Source: filepath.ToSlash(*file)}
	if o.Package == "" && *lang == "go" {
		abs, err := filepath.Abs(*out)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		o.Package = gen.PackageName(filepath.Base(abs))
	}
	files, err := gen.Generate(cfg, table, o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, f := range files {
		path := filepath.Join(*out, f.Name)
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintln(stdout, path)
	}
	return 0
}
