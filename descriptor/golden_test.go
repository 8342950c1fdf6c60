package descriptor_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// update rewrites the golden files with what the code produces now:
//
//	go test ./descriptor -run TestGolden -update
var update = flag.Bool("update", false, "rewrite descriptor/testdata/*.txt with the current output")

// separator splits a golden file into its config snippet and the expected
// output, as caddy's caddyfile_adapt tests do.
const separator = "\n----------\n"

// TestGolden runs every testdata/*.txt: a config snippet, the separator,
// and either the merged table or every error of layers 1 and 2, in order.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files in testdata")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			src, want, ok := strings.Cut(string(data), separator)
			if !ok {
				t.Fatalf("%s: no %q line between the config and the expected output", path, strings.TrimSpace(separator))
			}
			got := compileGolden(src + "\n")
			if *update {
				if err := os.WriteFile(path, []byte(src+separator+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("%s: output differs (go test ./descriptor -run TestGolden -update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}

// compileGolden runs layers 1 and 2 on src as bootstrap does and renders
// the outcome.
func compileGolden(src string) string {
	cfg, errs := config.Parse(file, []byte(src))
	table, merrs := descriptor.Merge(cfg)
	errs = append(errs, merrs...)
	var b bytes.Buffer
	if len(errs) > 0 {
		errs.Sort()
		b.WriteString("errors:\n")
		for _, e := range errs {
			fmt.Fprintln(&b, e)
		}
		return b.String()
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tDIRECTION\tOWNER\tDECLARER\tBINDING\tREQUIRES_AUTH\tACTION\tCODEC\tSCHEMA\tLINE")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, r := range table.Routes() {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s\t%s\t%d\n", r.ID, dash(r.Name), r.Direction, r.Owner, r.Declarer,
			r.Binding, r.RequiresAuth, r.Action, dash(r.RequestCodec), dash(r.RequestSchema), r.Line)
	}
	tw.Flush()
	return b.String()
}
