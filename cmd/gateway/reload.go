package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// reloadCmd asks a running gateway to reload (SPEC §12) through its admin
// API: exit 0 when the reload succeeded, 1 after printing its errors (or
// why the gateway could not be asked).
func reloadCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("admin", "127.0.0.1:9100", "the gateway's admin `HOST:PORT` (network.admin.address)")
	token := fs.String("token", os.Getenv("SHIELD_ADMIN_TOKEN"), "network.admin.token (default $SHIELD_ADMIN_TOKEN)")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gateway reload: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	url := *addr
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+"/admin/reload", nil)
	if err != nil {
		fmt.Fprintln(stderr, "gateway reload:", err)
		return 1
	}
	req.Header.Set("Authorization", "Bearer "+*token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "gateway reload:", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		fmt.Fprintf(stderr, "gateway reload: %s answers 404: the admin API is off there (network.admin.token is empty)\n", *addr)
		return 1
	case http.StatusUnauthorized:
		fmt.Fprintln(stderr, "gateway reload: the token was refused (401): give network.admin.token with -token")
		return 1
	default:
		fmt.Fprintf(stderr, "gateway reload: %s: %s\n", resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	var out struct {
		OK     bool     `json:"ok"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		fmt.Fprintf(stderr, "gateway reload: the answer is not JSON: %v\n", err)
		return 1
	}
	if !out.OK {
		fmt.Fprintln(stderr, "reload failed:")
		for _, e := range out.Errors {
			fmt.Fprintln(stderr, "  "+e)
		}
		return 1
	}
	fmt.Fprintln(stdout, "reload ok")
	return 0
}
