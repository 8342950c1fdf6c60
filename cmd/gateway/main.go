// Command gateway runs and checks a Shield gateway.
//
//	gateway                  serve the example game: gateway run -c configs/actors.yaml
//	gateway run [-c FILE]    serve until SIGINT or SIGTERM, then drain
//	gateway check [-c FILE]  validate the config, compile every VM, print the route table
//	gateway reload           reload a running gateway (POST /admin/reload)
//	gateway token -user NAME mint a login token for the example game
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
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
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelp(args[0]) {
		return runServer(args, stdout, stderr)
	}
	switch args[0] {
	case "run":
		return runServer(args[1:], stdout, stderr)
	case "check":
		return check(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "call":
		return callCmd(args[1:], stdout, stderr)
	case "routes":
		return routesCmd(args[1:], stdout, stderr)
	case "gen":
		return genCmd(args[1:], stdout, stderr)
	case "reload":
		return reloadCmd(args[1:], stdout, stderr)
	case "token":
		return tokenCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "gateway: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  gateway                  serve the example game (configs/actors.yaml)
  gateway run [-c FILE]    serve FILE until SIGINT or SIGTERM, then drain
      -text                log as text
  gateway check [-c FILE]  validate FILE, compile every VM, print the route table
  gateway routes [-c FILE] print the route table with codecs (no VM is spawned)
  gateway gen [-c FILE] -lang ts|go -o DIR  write typed client stubs for the route table
  gateway call [-addr HOST:PORT] [-envelope idlen] ROUTE_NAME_OR_ID JSON [ROUTE JSON ...]
                           make requests on one connection; print answers, pushes and notices
  gateway reload [-admin HOST:PORT] [-token T]
                           reload a running gateway's config and scripts (its admin API)
  gateway token -user NAME [-c FILE] [-ttl 24h]
                           print a login token for the example game's auth (signed with its settings.token_secret)
  gateway bench [flags]    measure the gateway against a baseline echo server (-h for flags)
`)
}
