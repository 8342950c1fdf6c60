package acceptance

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
)

// TestFileLimitReserve (issue 19, SPEC §9): a gateway started under an
// open-file limit of 400 (or a soft limit of 300 under a hard one of 400,
// which it raises) with max_sessions 100,000 lowers max_sessions to
// 400 - 256 = 144 with a warning; the connections past it are refused at
// accept and counted, and /healthz and a new login (once a slot is free)
// still work, because the reserve keeps descriptors for them. The red
// team ran a gateway out of descriptors at 19,990 of 100,000 sessions:
// logins and /healthz timed out, and nothing was counted as refused.
func TestFileLimitReserve(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a gateway process")
	}
	for _, tc := range []struct {
		name string
		o    procOptions
	}{
		{"hard limit", procOptions{openFiles: 400}},
		{"soft limit raised", procOptions{openFiles: 400, softFiles: 300}},
	} {
		t.Run(tc.name, func(t *testing.T) { testFileLimit(t, tc.o) })
	}
}

func testFileLimit(t *testing.T, o procOptions) {
	const (
		fit   = 400 - 256
		extra = 50
	)
	h := startHostile(t, hostileSetup{session: "max_sessions: 100000, idle_timeout: 120s"}, o)
	if n := h.count("session.max_sessions lowered to fit the open-file limit", map[string]string{
		"max_sessions": "100000", "lowered_to": "144", "open_file_limit": "400", "reserve": "256", "level": "WARN"}); n != 1 {
		t.Fatalf("%d warnings that max_sessions was lowered to %d, want 1:\n%s", n, fit, h.dump())
	}
	held := dialMany(t, h.game, fit)
	if !pollFor(patience, func() bool { return h.metric(t, "shield_sessions") == fit }) {
		t.Fatalf("%v sessions, want %d", h.metric(t, "shield_sessions"), fit)
	}
	refused := h.metric(t, "shield_sessions_refused_total")

	// Past the lowered max_sessions: accepted, closed at once, counted.
	over := dialMany(t, h.game, extra)
	for i, c := range over {
		c.SetReadDeadline(time.Now().Add(patience))
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("connection %d past max_sessions: read %d, %v; want the gateway to close it", i, n, err)
		}
	}
	if got := h.metric(t, "shield_sessions_refused_total"); got != refused+extra {
		t.Errorf("shield_sessions_refused_total %v, want %v", got, refused+extra)
	}
	if got := h.metric(t, "shield_sessions"); got != fit {
		t.Errorf("%v sessions, want %d", got, fit)
	}

	// The reserve: the admin server answers while the sessions are full.
	resp, err := http.Get("http://" + h.admin + "/healthz")
	if err != nil {
		t.Fatalf("/healthz with max_sessions full: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	// A freed slot takes a new login at once.
	held[0].Close()
	if !pollFor(patience, func() bool { return h.metric(t, "shield_sessions") == fit-1 }) {
		t.Fatalf("%v sessions after one closed, want %d", h.metric(t, "shield_sessions"), fit-1)
	}
	c := h.dial(t, client.Options{})
	var ref hostileRef
	call(t, c, hLogin, map[string]string{"user": "late"}, &ref)
	if ref.PlayerID != "late" {
		t.Fatalf("login: %+v", ref)
	}
}
