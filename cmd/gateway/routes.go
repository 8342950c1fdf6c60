package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// routesCmd prints the merged route table with codecs, from layers 1 and 2
// only: no VM is spawned, so it works without the scripts.
func routesCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("routes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("c", defaultConfig, "configuration `FILE`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load(*file)
	var errs config.Errors
	if err != nil {
		if cfg == nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		errs = append(errs, err.(config.Errors)...)
	}
	table, merrs := descriptor.Merge(cfg)
	errs = append(errs, merrs...)
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintf(stderr, "%s: %d error(s)\n", *file, len(errs))
		return 1
	}
	// Schemas need no VM: compile them for the SCHEMA column when they
	// compile (check reports the ones that do not).
	var schemas *codec.Schemas
	if cfg.Network.SchemasDir != "" {
		schemas, _ = codec.NewSchemas(cfg.Network.SchemasDir, table.Routes())
	}
	printTable(stdout, cfg, table, schemas)
	return 0
}
