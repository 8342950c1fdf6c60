package config_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
)

// TestZeroAllowed: the keys that say what 0 means accept it (SPEC §2),
// where every other duration, size and count refuses it.
func TestZeroAllowed(t *testing.T) {
	cfg := parseOK(t, valid+`session:
  auth_timeout: 0s
  resume_window: 0s
  auth_max_frame_bytes: 0
storage:
  buckets: [{name: players, ttl: 0s}]
`)
	s := cfg.Session
	if s.AuthTimeout != 0 || s.ResumeWindow != 0 || s.AuthMaxFrameBytes != 0 {
		t.Errorf("session = %+v, want auth_timeout, resume_window and auth_max_frame_bytes 0", s)
	}
	if ttl := cfg.Storage.Buckets[0].TTL; ttl != 0 {
		t.Errorf("ttl = %v, want 0 (keep forever)", ttl)
	}
	// Zero is a value given, not a default: a non-zero default is replaced.
	cfg = parseOK(t, valid+"session: {auth_timeout: 0ms, resume_window: 2m}\n")
	if cfg.Session.AuthTimeout != 0 || cfg.Session.ResumeWindow != 2*time.Minute {
		t.Errorf("session = %+v", cfg.Session)
	}
}

// TestAuthFrameLimit: 0 means the listener's max_frame_bytes, and a cap
// above a listener's never raises it.
func TestAuthFrameLimit(t *testing.T) {
	for _, tc := range []struct{ auth, listener, want int }{
		{0, 65536, 65536},
		{8192, 65536, 8192},
		{8192, 4096, 4096},
		{16, 16, 16},
	} {
		s := config.Session{AuthMaxFrameBytes: tc.auth}
		if got := s.AuthFrameLimit(tc.listener); got != tc.want {
			t.Errorf("AuthFrameLimit(%d) with auth_max_frame_bytes %d = %d, want %d", tc.listener, tc.auth, got, tc.want)
		}
	}
	cfg := parseOK(t, valid+"session: {auth_max_frame_bytes: 16}\n")
	if got := cfg.Session.AuthMaxFrameBytes; got != config.MinFrameBytes {
		t.Errorf("auth_max_frame_bytes = %d, want %d", got, config.MinFrameBytes)
	}
}

// TestHandlerTimeoutLimit: 60s is allowed, the limit itself.
func TestHandlerTimeoutLimit(t *testing.T) {
	cfg := parseOK(t, authHead+"    handler_timeout: 1m\n")
	if got := cfg.Actors[0].HandlerTimeout; got != 60*time.Second {
		t.Errorf("handler_timeout = %v, want 60s", got)
	}
	if config.MaxHandlerTimeout != 60*time.Second {
		t.Errorf("MaxHandlerTimeout = %v, want 60s (SPEC §2)", config.MaxHandlerTimeout)
	}
}

// TestHTTPAllow: host:port pairs of every shape a URL can name are kept as
// written.
func TestHTTPAllow(t *testing.T) {
	cfg := parseOK(t, valid+`lua:
  http:
    allow: ["api.example.com:443", "127.0.0.1:1", "[::1]:65535", "Upper.Example:8080"]
`)
	want := config.HTTP{
		Allow:   []string{"api.example.com:443", "127.0.0.1:1", "[::1]:65535", "Upper.Example:8080"},
		Timeout: 5 * time.Second, MaxResponseBytes: 1 << 20,
	}
	if !reflect.DeepEqual(cfg.Lua.HTTP, want) {
		t.Errorf("lua.http = %+v, want %+v", cfg.Lua.HTTP, want)
	}
}
