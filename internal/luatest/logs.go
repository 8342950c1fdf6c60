package luatest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Logs captures the JSON log lines of a world; it is the writer of the
// world's slog handler.
type Logs struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

// Write appends p, one or more JSON lines.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Records returns every log record whose msg is msg ("" for all).
func (l *Logs) Records(msg string) []map[string]any {
	l.mu.Lock()
	data := append([]byte(nil), l.buf.Bytes()...)
	l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && (msg == "" || m["msg"] == msg) {
			out = append(out, m)
		}
	}
	return out
}

// WaitRecords waits until at least n records with msg were logged.
func (l *Logs) WaitRecords(t testing.TB, msg string, n int) []map[string]any {
	t.Helper()
	var got []map[string]any
	Wait(t, 5*time.Second, fmt.Sprintf("%d log records %q", n, msg), func() bool {
		got = l.Records(msg)
		return len(got) >= n
	})
	return got
}

// Wait polls until cond holds, failing after d.
func Wait(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
