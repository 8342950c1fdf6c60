package acceptance

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
)

// incidentMessage is the message of a handler_failed answer (SPEC §6).
var incidentMessage = regexp.MustCompile(`^internal error \(incident ([0-9a-f]{16})\)$`)

// TestIncidentLogBounded (issue 19, SPEC §6): a client that makes a
// handler raise 500 times gets 500 distinct incident ids, but the VM logs
// at most its burst of 100 incident lines plus 10 a second, one line per
// incident, each naming one of the client's ids; the rest are counted in
// shield_incidents_not_logged_total. The red team wrote a 348-byte
// traceback for each 14-byte request, without limit.
func TestIncidentLogBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a gateway process")
	}
	const raises = 500
	h := startHostile(t, hostileSetup{session: "rate_limit: {per_second: 2000, burst: 2000}"}, procOptions{})
	c := h.dial(t, client.Options{})
	ids := map[string]bool{}
	start := time.Now()
	for i := range raises {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		err := c.Call(ctx, hRaise, nil, nil)
		cancel()
		var ce *codes.Error
		if !errors.As(err, &ce) || ce.Code != codes.HandlerFailed {
			t.Fatalf("raise %d: %v, want %s", i, err, codes.HandlerFailed)
		}
		m := incidentMessage.FindStringSubmatch(ce.Message)
		if m == nil {
			t.Fatalf("raise %d: message %q", i, ce.Message)
		}
		if ids[m[1]] {
			t.Fatalf("raise %d: incident %s again", i, m[1])
		}
		ids[m[1]] = true
	}
	took := time.Since(start)
	notLogged := `shield_incidents_not_logged_total{service="hostile"}`
	var logged int
	if !pollFor(patience, func() bool {
		logged = h.count("handler failed", nil)
		return float64(logged)+h.metric(t, notLogged) == raises
	}) {
		t.Fatalf("%d incident lines + %v not logged, want %d", logged, h.metric(t, notLogged), raises)
	}
	t.Logf("%d raises in %v: %d incident lines, %v counted as not logged", raises, took.Round(time.Millisecond), logged, h.metric(t, notLogged))
	if limit := 100 + 10*took.Seconds() + 1; float64(logged) > limit || logged < 100 {
		t.Errorf("%d incident lines in %v, want 100 to %.0f", logged, took, limit)
	}
	// After the burst, 10 a second: 100 more raises over 2 s get about
	// 20 lines.
	const paced = 100
	before, notBefore := logged, h.metric(t, notLogged)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	start2 := time.Now()
	for range paced {
		<-tick.C
		err := callErr(t, c, hRaise, nil, nil)
		var ce *codes.Error
		if !errors.As(err, &ce) || ce.Code != codes.HandlerFailed {
			t.Fatalf("paced raise: %v", err)
		}
		ids[incidentMessage.FindStringSubmatch(ce.Message)[1]] = true
	}
	took2 := time.Since(start2)
	// The bucket refills from the burst's last raise on, not from start2.
	since := time.Since(start.Add(took))
	if !pollFor(patience, func() bool {
		logged = h.count("handler failed", nil)
		return float64(logged-before)+h.metric(t, notLogged)-notBefore == paced
	}) {
		t.Fatalf("%d incident lines + %v not logged, want %d", logged-before, h.metric(t, notLogged)-notBefore, paced)
	}
	t.Logf("%d raises over %v: %d incident lines", paced, took2.Round(time.Millisecond), logged-before)
	if got, want := float64(logged-before), 10*since.Seconds(); got < 10*took2.Seconds()-2 || got > want+1 {
		t.Errorf("%v incident lines for %d raises over %v, want 10 a second (%.0f)", got, paced, took2, want)
	}
	lines := map[string]int{}
	h.mu.Lock()
	for _, l := range h.lines {
		if l["msg"] == "handler failed" {
			lines[fmt.Sprint(l["incident"])]++
		}
	}
	h.mu.Unlock()
	for id, n := range lines {
		if !ids[id] || n != 1 {
			t.Errorf("incident %s: %d lines, and the client was told of it: %v", id, n, ids[id])
		}
	}
}
