package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/codec"
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
	printTable(stdout, rep.Config, rep.Table, rep.Schemas)
	vms := rep.Runtime.VMs("")
	if c := rep.Config.Cluster; c != nil {
		printPlacement(stdout, rep.Config)
	}
	fmt.Fprintf(stdout, "\n%s: ok: %d routes, %d actors, %d VMs compiled\n", *file, rep.Table.Len(), len(rep.Config.Actors), vms)
	return 0
}

// printPlacement says what a cluster node file makes of its node (SPEC
// §10), checked offline: the instances it hosts (its only VMs compiled)
// and whether it is a gateway.
func printPlacement(w io.Writer, cfg *config.Config) {
	var hosted []string
	for _, a := range cfg.Actors {
		for _, i := range cfg.HostedInstances(a.Name) {
			hosted = append(hosted, fmt.Sprintf("%s/%d", a.Name, i))
		}
	}
	role := "service node"
	if len(cfg.Network.Listeners) > 0 {
		role = "gateway"
	}
	fmt.Fprintf(w, "\ncluster node %s (%s, prefix %s): hosts %s\n", cfg.Node.Name, role, cfg.Cluster.Prefix, dash(strings.Join(hosted, " ")))
}

// printTable prints the descriptor table, one route a line, with the body
// codec a request is decoded with and the schema (a JSON Schema name or a
// protobuf message) it is checked against, for the routes that have one.
func printTable(w io.Writer, cfg *config.Config, t *descriptor.Table, schemas *codec.Schemas) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tDIRECTION\tOWNER\tBINDING\tREQUIRES_AUTH\tACTION\tCODEC\tSCHEMA")
	for _, r := range t.Routes() {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%t\t%s\t%s\t%s\n", r.ID, dash(r.Name), r.Direction, r.Owner, dash(r.Binding),
			r.RequiresAuth, r.Action, routeCodec(cfg, &r), dash(routeSchema(cfg, &r, schemas)))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// routeCodec is how a request on r reaches its handler: the listeners' body
// codecs, or raw when the route asks for the bytes (codec.RequestOf).
func routeCodec(cfg *config.Config, r *descriptor.Route) string {
	if codec.RequestOf(r) == codec.RequestRaw {
		return "raw"
	}
	seen := map[string]bool{}
	out := ""
	for _, l := range cfg.Network.Listeners {
		if b := l.Protocol.Body; !seen[b] {
			seen[b] = true
			if out != "" {
				out += ","
			}
			out += b
		}
	}
	return out
}

// routeSchema is the schema type name of SPEC §2 (request_schema, else the
// route's name), shown only for a route that has one: a JSON Schema file
// that validates it, or, with a protobuf listener, the message its bodies
// are encoded with.
func routeSchema(cfg *config.Config, r *descriptor.Route, schemas *codec.Schemas) string {
	if schemas.Has(r.ID) {
		return codec.SchemaName(r)
	}
	for _, l := range cfg.Network.Listeners {
		if l.Protocol.Body == "protobuf" && codec.UsesListener(r) {
			return codec.SchemaName(r)
		}
	}
	return ""
}
