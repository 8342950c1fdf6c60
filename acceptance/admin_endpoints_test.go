package acceptance

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestAdminEndpoints (SPEC §9): the admin address serves /healthz at once,
// /readyz ready while serving and not ready once the drain began, and
// Prometheus /metrics with the figures of what the gateway did: the
// session gauge, requests by route name and code, and the handler
// histogram.
func TestAdminEndpoints(t *testing.T) {
	cfg := strings.Replace(contractConfig(t, "  shutdown_grace: 5s"), "network:\n", "network:\n  admin: {address: \"127.0.0.1:0\"}\n", 1)
	s := wiretest.Start(t, "contract.yaml", cfg, nil)
	base := "http://" + s.Srv.Admin.Addr()
	get := func(path string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		r, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz while serving: %d", code)
	}
	w := wiretest.Dial(t, "idlen", s.Addr("idlen"), "idlen")
	w.Send(req(cWhoami, 1, nil))
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	code, metrics := get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, line := range []string{
		"shield_sessions 1",
		`shield_requests_total{code="ok",route="whoami_lobby",service="lobby"} 1`,
		`shield_handler_seconds_count{route="whoami_lobby",service="lobby"} 1`,
	} {
		if !strings.Contains(metrics, "\n"+line+"\n") {
			t.Errorf("/metrics has no line %q", line)
		}
	}

	// The drain: /readyz says not ready while the session is still served.
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop() }()
	w.Expect(envelope.Frame{Kind: envelope.Notice}) // gateway.drain_started
	deadline := time.Now().Add(patience)
	for {
		if code, _ := get("/readyz"); code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz still ready during the drain")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz during the drain: %d", code)
	}
	w.NC.Close() // the last session leaves: the drain ends
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * patience):
		t.Fatal("the drain never ended")
	}
}
