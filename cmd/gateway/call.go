package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// callCmd makes requests from a terminal: each ROUTE JSON pair is one
// request on one connection (so a login holds for the calls after it), then
// it prints the pushes and notices that arrive within -wait.
func callCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:7000", "gateway listener `HOST:PORT`")
	env := fs.String("envelope", "idlen", "envelope: idlen, typelen, lenprefix or delimiter")
	file := fs.String("c", defaultConfig, "config `FILE` used to resolve route names")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for each answer")
	wait := fs.Duration("wait", 500*time.Millisecond, "how long to wait for pushes after the last answer")
	dial := addDialFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gateway call [-addr HOST:PORT] [-envelope idlen] [-ws] [-tls [-ca FILE] [-cert FILE -key FILE]] [-c FILE] ROUTE_NAME_OR_ID JSON [ROUTE JSON ...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 || len(rest)%2 != 0 {
		fs.Usage()
		return 2
	}
	table := routeTable(*file)
	type req struct {
		id   uint32
		name string
		body json.RawMessage
	}
	var reqs []req
	for i := 0; i < len(rest); i += 2 {
		id, name, err := resolveRoute(table, rest[i])
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		if !json.Valid([]byte(rest[i+1])) {
			fmt.Fprintf(stderr, "gateway call: %s: the body is not JSON: %q\n", rest[i], rest[i+1])
			return 2
		}
		reqs = append(reqs, req{id, name, json.RawMessage(rest[i+1])})
	}

	opts := client.Options{Envelope: *env}
	if err := dial.apply(&opts); err != nil {
		fmt.Fprintln(stderr, "gateway call:", err)
		return 2
	}
	ctx := context.Background()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	c, err := client.Dial(dctx, *addr, opts)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "gateway call:", err)
		if opts.Transport == "ws" && !errors.As(err, new(*client.UpgradeError)) {
			fmt.Fprintln(stderr, "gateway call:", diagnose(*addr, opts))
		}
		return 1
	}
	defer c.Close()
	var mu sync.Mutex // orders the output of the read loop and this goroutine
	c.OnAnyPush(func(route uint32, body []byte) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, "push %s %s\n", routeName(table, route), body)
	})
	c.OnNotice(func(code, msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, "notice %s: %s\n", code, msg)
	})
	c.OnStatus(func(st client.Status) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, "status %s\n", statusText(st))
	})

	status := 0
	answered := false
	for _, r := range reqs {
		var body []byte
		cctx, cancel := context.WithTimeout(ctx, *timeout)
		err := c.Call(cctx, r.id, []byte(r.body), &body)
		cancel()
		mu.Lock()
		var ce *codes.Error
		switch {
		case err == nil:
			answered = true
			fmt.Fprintf(stdout, "%s -> %s\n", r.name, orEmpty(body))
		case errors.As(err, &ce):
			answered = true
			fmt.Fprintf(stdout, "%s -> error %s: %s\n", r.name, ce.Code, ce.Message)
			status = 1
		case errors.Is(err, client.ErrClosed) && !answered:
			// Closed before any answer: most likely the client does not
			// speak what the listener does.
			fmt.Fprintf(stdout, "%s -> connection closed (%v)\n", r.name, c.Err())
			fmt.Fprintln(stderr, "gateway call:", diagnose(*addr, opts))
			mu.Unlock()
			return 1
		case errors.Is(err, context.DeadlineExceeded):
			fmt.Fprintf(stdout, "%s -> no answer within %v (dropped at the edge: unknown route, wrong direction or not logged in)\n", r.name, *timeout)
			if !answered {
				// Nothing answered yet: the listener may speak something else.
				fmt.Fprintln(stderr, "gateway call: if the route is right:", diagnose(*addr, opts))
			}
			status = 1
		default:
			fmt.Fprintf(stdout, "%s -> %v\n", r.name, err)
			status = 1
		}
		mu.Unlock()
	}
	time.Sleep(*wait)
	return status
}

// statusText is a status frame as call prints it.
func statusText(st client.Status) string {
	switch {
	case st.Token != "":
		return st.Code + " (token " + st.Token + ")"
	case st.GraceMS > 0:
		return fmt.Sprintf("%s (grace %d ms)", st.Code, st.GraceMS)
	case st.Message != "":
		return st.Code + ": " + st.Message
	}
	return st.Code
}

func orEmpty(b []byte) string {
	if len(b) == 0 {
		return "(empty body)"
	}
	return string(b)
}

// routeTable loads the descriptor for names; without a readable config,
// only numeric routes work.
func routeTable(file string) *descriptor.Table {
	cfg, err := config.Load(file)
	if cfg == nil || err != nil {
		return nil
	}
	t, errs := descriptor.Merge(cfg)
	if len(errs) > 0 {
		return nil
	}
	return t
}

func resolveRoute(t *descriptor.Table, s string) (uint32, string, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(n), routeName(t, uint32(n)), nil
	}
	if t != nil {
		if r, ok := t.ByName(s); ok {
			return r.ID, s, nil
		}
	}
	return 0, "", fmt.Errorf("gateway call: unknown route %q (give its id, or -c the config that names it)", s)
}

func routeName(t *descriptor.Table, id uint32) string {
	if t != nil {
		if r, ok := t.Route(id); ok && r.Name != "" {
			return r.Name
		}
	}
	return strconv.FormatUint(uint64(id), 10)
}
