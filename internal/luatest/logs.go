package luatest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// Logs captures the JSON log lines of a world; it is the writer of the
// world's slog handler.
//
// Lines are read as token streams, not unmarshalled into maps: a map keeps
// the last of two equal keys, so a line that carries a key twice (SPEC §9:
// session_id and player_id exactly once) could never fail a test. A line
// with a duplicated key, at any depth, or one that is not a JSON object,
// fails the test that owns the world (each such line once).
type Logs struct {
	t testing.TB // fails on a bad line; nil: a bad line panics

	mu       sync.Mutex // guards buf and reported
	buf      bytes.Buffer
	reported map[string]bool // bad lines already reported
}

// Write appends p, one or more JSON lines.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Records returns every log record whose msg is msg ("" for all). A record
// with a duplicated key is returned with the last value of that key, and
// fails the test.
func (l *Logs) Records(msg string) []map[string]any {
	l.mu.Lock()
	data := append([]byte(nil), l.buf.Bytes()...)
	l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		m, dups, err := decodeRecord(sc.Bytes())
		if err != nil || len(dups) > 0 {
			l.report(sc.Text(), dups, err)
		}
		if m != nil && (msg == "" || m["msg"] == msg) {
			out = append(out, m)
		}
	}
	return out
}

// Check reads every line, failing the test on each bad one; the world
// runs it at cleanup, so that a line no test asked for is checked too.
func (l *Logs) Check() { l.Records("") }

// report fails the test for a bad line, once per line.
func (l *Logs) report(line string, dups []string, err error) {
	l.mu.Lock()
	seen := l.reported[line]
	if l.reported == nil {
		l.reported = map[string]bool{}
	}
	l.reported[line] = true
	l.mu.Unlock()
	if seen {
		return
	}
	what := fmt.Sprintf("duplicated keys %q", dups)
	if err != nil {
		what = err.Error()
	}
	if l.t == nil {
		panic(fmt.Sprintf("luatest: log line %s: %s", line, what))
	}
	l.t.Errorf("log line %s: %s", line, what)
}

// decodeRecord decodes one log line, which must be one JSON object, as a
// token stream. It returns the record (the last value of a repeated key
// wins, as with json.Unmarshal) and the JSON Pointer of every key that
// appears twice in its object, nested objects included.
func decodeRecord(line []byte) (map[string]any, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	var dups []string
	m, err := decodeObject(dec, "", &dups)
	if err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("more after the object")
	}
	return m, dups, nil
}

// decodeObject reads the members of an object whose '{' was read, and its
// '}'; path is the object's JSON Pointer.
func decodeObject(dec *json.Decoder, path string, dups *[]string) (map[string]any, error) {
	m := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("key %v is not a string", tok)
		}
		at := path + "/" + key
		if _, seen := m[key]; seen {
			*dups = append(*dups, at)
		}
		if m[key], err = decodeValue(dec, at, dups); err != nil {
			return nil, err
		}
	}
	_, err := dec.Token() // '}'
	return m, err
}

// decodeValue reads one value: objects become maps, arrays slices, numbers
// float64, as json.Unmarshal into an any would make them.
func decodeValue(dec *json.Decoder, path string, dups *[]string) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		return decodeObject(dec, path, dups)
	case json.Delim('['):
		a := []any{}
		for i := 0; dec.More(); i++ {
			v, err := decodeValue(dec, fmt.Sprintf("%s/%d", path, i), dups)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ']'
		return a, err
	default:
		return tok, nil // string, float64, bool or nil
	}
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
