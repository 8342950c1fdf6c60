package service_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/testutil"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/service"
)

// events is one ordered record of what the resources did and what the
// VMs logged.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	e.list = append(e.list, s)
	e.mu.Unlock()
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.list, ", ")
}

// Handle makes events a slog handler that records each message.
func (e *events) Enabled(context.Context, slog.Level) bool      { return true }
func (e *events) Handle(_ context.Context, r slog.Record) error { e.add(r.Message); return nil }
func (e *events) WithAttrs([]slog.Attr) slog.Handler            { return e }
func (e *events) WithGroup(string) slog.Handler                 { return e }

// resource records its start and close; fail makes Start fail.
type resource struct {
	name string
	ev   *events
	fail bool
}

func (r *resource) Start(context.Context) error {
	r.ev.add(r.name + " start")
	if r.fail {
		return errors.New(r.name + " cannot start")
	}
	return nil
}

func (r *resource) Close() error { r.ev.add(r.name + " close"); return nil }

func runtimeWith(t *testing.T, ev *events, res ...service.Resource) *service.Runtime {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "a.lua")
	testutil.WriteFile(t, script, `local M = {}
function M.init(ctx) shield.log.info("init") end
function M.stop(ctx) shield.log.info("stop") end
return M`)
	log := slog.New(ev)
	rt, err := service.New([]service.Actor{{Name: "a", Mailbox: 8, VMs: []luavm.Spec{{Service: "a", Script: script, Logger: log}}}},
		service.Options{Logger: log, Resources: res})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestResources: a runtime's resources start, in order, before any init,
// and close, in reverse order, after every stop; a resource that cannot
// start fails the start, runs no init, and every resource still closes.
func TestResources(t *testing.T) {
	testutil.CheckGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ev := &events{}
	rt := runtimeWith(t, ev, &resource{name: "kv", ev: ev}, &resource{name: "http", ev: ev})
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := ev.String(), "kv start, http start, init, stop, http close, kv close"; got != want {
		t.Errorf("order: %s\nwant:  %s", got, want)
	}

	ev = &events{}
	rt = runtimeWith(t, ev, &resource{name: "kv", ev: ev, fail: true}, &resource{name: "http", ev: ev})
	if err := rt.Start(ctx); err == nil || !strings.Contains(err.Error(), "kv cannot start") {
		t.Fatalf("start: %v", err)
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := ev.String(), "kv start, http close, kv close"; got != want {
		t.Errorf("order: %s\nwant:  %s", got, want)
	}

	ev = &events{}
	rt = runtimeWith(t, ev, &resource{name: "kv", ev: ev})
	rt.Close() // never started: gateway check
	if got, want := ev.String(), "kv close"; got != want {
		t.Errorf("order: %s\nwant:  %s", got, want)
	}
}
