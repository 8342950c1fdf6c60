package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// check runs the three validation layers and prints the route table; on
// failure it prints every error found and returns 1.
func check(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("c", defaultConfig, "configuration `FILE`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Scripts may log at load time; keep that off the table's stdout.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rep, err := bootstrap.Compile(*file, bootstrap.Options{Logger: log})
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				fmt.Fprintln(stderr, e)
			}
			fmt.Fprintf(stderr, "%s: %d error(s)\n", *file, len(errs))
		} else {
			fmt.Fprintln(stderr, err)
		}
		return 1
	}
	defer rep.Close()
	printTable(stdout, rep.Table)
	vms := 0
	for _, v := range rep.VMs {
		vms += len(v)
	}
	fmt.Fprintf(stdout, "\n%s: ok: %d routes, %d actors, %d VMs compiled\n", *file, rep.Table.Len(), len(rep.Config.Actors), vms)
	return 0
}

func printTable(w io.Writer, t *descriptor.Table) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tDIRECTION\tOWNER\tBINDING\tREQUIRES_AUTH\tACTION")
	for _, r := range t.Routes() {
		name := r.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%t\t%s\n", r.ID, name, r.Direction, r.Owner, r.Binding, r.RequiresAuth, r.Action)
	}
	tw.Flush()
}
