// Command gateway runs and checks a Shield gateway.
//
//	gateway                  the example game: gateway check -c configs/actors.yaml (until serving lands)
//	gateway check [-c FILE]  validate the config, compile every VM, print the route table
package main

import (
	"fmt"
	"io"
	"os"
)

// defaultConfig is the example game, relative to the repository root where
// `go run ./cmd/gateway` is run.
const defaultConfig = "configs/actors.yaml"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the exit status, so that tests
// can drive the CLI in-process.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return check([]string{"-c", defaultConfig}, stdout, stderr)
	}
	switch args[0] {
	case "check":
		return check(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "gateway: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  gateway                  check the example game (configs/actors.yaml)
  gateway check [-c FILE]  validate FILE, compile every VM, print the route table
`)
}
