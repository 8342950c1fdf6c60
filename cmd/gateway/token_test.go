package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/testutil"
)

// TestToken: gateway token prints "<user>.<expires>.<mac>", the mac being
// the HMAC-SHA256 that configs/services/auth.lua checks, under the
// example's settings.token_secret, expiring -ttl from now.
func TestToken(t *testing.T) {
	noLeak(t)
	code, out, errOut := gateway(t, "token", "-c", example, "-user", "alice", "-ttl", "1h")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	parts := strings.Split(strings.TrimSpace(out), ".")
	if len(parts) != 3 || parts[0] != "alice" {
		t.Fatalf("token %q", out)
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if d := time.Until(time.Unix(exp, 0)); err != nil || d < 59*time.Minute || d > time.Hour+time.Minute {
		t.Errorf("expires %q: %v from now", parts[1], d)
	}
	mac := hmac.New(sha256.New, []byte("dev-secret-change-me"))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if want := hex.EncodeToString(mac.Sum(nil)); parts[2] != want {
		t.Errorf("mac %s, want %s", parts[2], want)
	}
}

// TestTokenRefusals: a bad user, an unknown actor, and an actor without
// settings.token_secret.
func TestTokenRefusals(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "game.yaml")
	testutil.WriteFile(t, cfg, `network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: auth}
actors:
  - name: auth
    script: auth.lua
`)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-c", example, "-user", "a.b"}, 2, "letters, digits"},
		{[]string{"-c", example}, 2, "letters, digits"},
		{[]string{"-c", example, "-user", "a", "-actor", "nosuch"}, 1, `no actor "nosuch"`},
		{[]string{"-c", cfg, "-user", "a"}, 1, "no settings.token_secret"},
	} {
		code, _, errOut := gateway(t, append([]string{"token"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("token %v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.msg)
		}
	}
}
