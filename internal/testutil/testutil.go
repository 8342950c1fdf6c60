// Package testutil holds the small helpers that tests across the module
// share: writing a tree of files, failing a test or a whole package run
// that leaves goroutines behind, and reading a runtime metric. It is for tests only; no production code
// imports it.
package testutil

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// grace is how long goroutines on their way out get to finish before the
// ones still running count as left behind.
const grace = 5 * time.Second

// settle polls until at most before goroutines run or grace has passed,
// and returns how many run then.
func settle(before int) int {
	deadline := time.Now().Add(grace)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling, bounded by the deadline
	}
	return runtime.NumGoroutine()
}

// CheckGoroutines counts the goroutines running now and registers a
// cleanup that fails t, with every goroutine's stack, if more still run
// once the grace period is over. Cleanups run last in, first out: the ones
// registered after this call (stopping what the test started, removing its
// temp dir) have run by the time the count is taken.
func CheckGoroutines(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if n := settle(before); n > before {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines left behind (%d before):\n%s", n-before, before, buf[:runtime.Stack(buf, true)])
		}
	})
}

// CheckGoroutinesMain runs m for a TestMain and returns the exit code,
// turned to 1 when the tests passed but left goroutines behind; pkg names
// the package in that message. Use: os.Exit(testutil.CheckGoroutinesMain(m, "config")).
func CheckGoroutinesMain(m *testing.M, pkg string) int {
	before := runtime.NumGoroutine()
	code := m.Run()
	// Fuzzing leaves the coordinator's own goroutines running: check only
	// plain test runs.
	if f := flag.Lookup("test.fuzz"); code == 0 && (f == nil || f.Value.String() == "") {
		if n := settle(before); n > before {
			fmt.Fprintf(os.Stderr, "%s: %d goroutines left behind (%d before the tests)\n", pkg, n-before, before)
			code = 1
		}
	}
	return code
}

// WriteFile writes content to path, making the folders it needs, and
// fails t on any error.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteFiles writes files (a path relative to dir, which may name
// subfolders -> the content) under dir.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		WriteFile(t, filepath.Join(dir, name), content)
	}
}

// RuntimeMetric reads one runtime/metrics value that is a uint64 (a heap
// size, GOGC, a count), 0 for any other kind.
func RuntimeMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
