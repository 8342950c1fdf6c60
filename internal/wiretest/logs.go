package wiretest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// LogSink is a slog.Handler that keeps every record, so a test can see
// what the Lua services logged (shield.log) and in which order.
type LogSink struct {
	mu      sync.Mutex // guards entries
	entries []Entry
}

// Entry is one record kept by a LogSink.
type Entry struct {
	Msg   string
	Attrs map[string]string
}

// sinkView is the sink with the attributes of a Logger.With.
type sinkView struct {
	sink  *LogSink
	attrs []slog.Attr
}

func (s *LogSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *LogSink) Handle(ctx context.Context, r slog.Record) error {
	return sinkView{sink: s}.Handle(ctx, r)
}
func (s *LogSink) WithAttrs(as []slog.Attr) slog.Handler { return sinkView{sink: s, attrs: as} }
func (s *LogSink) WithGroup(string) slog.Handler         { return s }

func (v sinkView) Enabled(context.Context, slog.Level) bool { return true }
func (v sinkView) Handle(_ context.Context, r slog.Record) error {
	e := Entry{Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range v.attrs {
		e.Attrs[a.Key] = text(a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		e.Attrs[a.Key] = text(a.Value)
		return true
	})
	v.sink.mu.Lock()
	v.sink.entries = append(v.sink.entries, e)
	v.sink.mu.Unlock()
	return nil
}

// text is a value as a test compares it: a nested JSON value (a table a
// script logged) as its JSON text, a null (a player_id before bind) as "".
func text(v slog.Value) string {
	if v.Kind() == slog.KindAny {
		switch x := v.Any().(type) {
		case nil:
			return ""
		case json.RawMessage:
			return string(x)
		}
	}
	return v.String()
}

func (v sinkView) WithAttrs(as []slog.Attr) slog.Handler {
	return sinkView{sink: v.sink, attrs: append(append([]slog.Attr(nil), v.attrs...), as...)}
}
func (v sinkView) WithGroup(string) slog.Handler { return v }

// Entry returns the i-th record kept.
func (s *LogSink) Entry(i int) Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[i]
}

// matches reports whether e has msg and every key/value pair of kv.
func (e Entry) matches(msg string, kv []string) bool {
	if e.Msg != msg {
		return false
	}
	for j := 0; j+1 < len(kv); j += 2 {
		if e.Attrs[kv[j]] != kv[j+1] {
			return false
		}
	}
	return true
}

// Find returns the index of the first entry with msg whose attributes
// include every key/value pair of kv, or -1.
func (s *LogSink) Find(msg string, kv ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.entries {
		if e.matches(msg, kv) {
			return i
		}
	}
	return -1
}

// Count is the number of entries Find would match.
func (s *LogSink) Count(msg string, kv ...string) int { return len(s.Matching(msg, kv...)) }

// Matching is every entry Find would match, oldest first.
func (s *LogSink) Matching(msg string, kv ...string) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var es []Entry
	for _, e := range s.entries {
		if e.matches(msg, kv) {
			es = append(es, e)
		}
	}
	return es
}

// WaitFor polls until an entry matches, and returns its index.
func (s *LogSink) WaitFor(t testing.TB, msg string, kv ...string) int {
	t.Helper()
	i := -1
	Eventually(t, fmt.Sprintf("log %q %v", msg, kv), func() bool {
		i = s.Find(msg, kv...)
		return i >= 0
	})
	return i
}

// Dump is every entry, one a line, for failure messages.
func (s *LogSink) Dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, e := range s.entries {
		fmt.Fprintf(&b, "  %s %v\n", e.Msg, e.Attrs)
	}
	return b.String()
}
