package main

import (
	"errors"
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
	cfg, table, ok := loadTable(*file, stderr)
	if !ok {
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

// loadTable runs layers 1 and 2 on file (no VM is spawned), printing every
// error of both and a count to stderr when there are any.
func loadTable(file string, stderr io.Writer) (*config.Config, *descriptor.Table, bool) {
	cfg, err := config.Load(file)
	var errs config.Errors
	if err != nil {
		if !errors.As(err, &errs) || cfg == nil {
			fmt.Fprintln(stderr, err)
			return nil, nil, false
		}
	}
	table, merrs := descriptor.Merge(cfg)
	errs = append(errs, merrs...)
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintf(stderr, "%s: %d error(s)\n", file, len(errs))
		return nil, nil, false
	}
	return cfg, table, true
}
