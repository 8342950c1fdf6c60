package tracing

import (
	"strings"
	"testing"
)

func TestParseTraceParent(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := []struct {
		name, in string
		ok       bool
		sampled  bool
	}{
		{"W3C's example", good, true, true},
		{"not sampled", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true, false},
		{"a later version with more fields", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", true, true},
		{"a later version, exactly 55", "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true, true},
		{"version ff is invalid", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false, false},
		{"version 00 with more", good + "-x", false, false},
		{"a later version, more without a dash", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false, false},
		{"upper-case hex", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false, false},
		{"all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", false, false},
		{"all-zero parent id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false, false},
		{"short", good[:54], false, false},
		{"empty", "", false, false},
		{"dash missing", strings.Replace(good, "-", "_", 1), false, false},
		{"not hex", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", false, false},
		{"flags not hex", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0z", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseTraceParent(c.in)
			if ok != c.ok {
				t.Fatalf("ParseTraceParent(%q) ok = %v, want %v", c.in, ok, c.ok)
			}
			if !ok {
				if got != (Context{}) {
					t.Fatalf("refused input gave %+v", got)
				}
				return
			}
			if got.Sampled() != c.sampled {
				t.Fatalf("sampled = %v, want %v", got.Sampled(), c.sampled)
			}
			if got.TraceIDString() != c.in[3:35] || got.SpanIDString() != c.in[36:52] {
				t.Fatalf("ids %s %s from %q", got.TraceIDString(), got.SpanIDString(), c.in)
			}
		})
	}
}

func TestTraceParentRoundTrip(t *testing.T) {
	c := Context{Flags: 1}
	for i := range c.TraceID {
		c.TraceID[i] = byte(i + 1)
	}
	for i := range c.SpanID {
		c.SpanID[i] = byte(0xf0 + i)
	}
	tp := c.TraceParent()
	if tp != "00-0102030405060708090a0b0c0d0e0f10-f0f1f2f3f4f5f6f7-01" {
		t.Fatalf("TraceParent = %q", tp)
	}
	back, ok := ParseTraceParent(tp)
	if !ok || back != c {
		t.Fatalf("round trip: %+v %v", back, ok)
	}
	if (Context{}).TraceParent() != "" {
		t.Fatal("the zero Context has a traceparent")
	}
}

// FuzzParseTraceParent: a client's traceparent is untrusted bytes. Whatever
// it is, parsing does not panic, and what parses prints back as itself
// (version 00) or as the version-00 form of its first 55 bytes.
func FuzzParseTraceParent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")
	f.Add("00-00000000000000000000000000000000-00f067aa0ba902b7-01")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseTraceParent(s)
		if !ok {
			return
		}
		if !c.Valid() {
			t.Fatalf("%q parsed to an invalid context", s)
		}
		want := "00" + s[2:55]
		if got := c.TraceParent(); got != want {
			t.Fatalf("%q printed back as %q", s, got)
		}
	})
}
