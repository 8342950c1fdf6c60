package acceptance

import (
	"context"
	"fmt"
	"testing"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// controlDepth reads shield_control_depth{service} from the server's
// registry, as a scrape would.
func controlDepth(t testing.TB, s *wiretest.Server, service string) float64 {
	t.Helper()
	mfs, err := s.Srv.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "shield_control_depth" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "service" && l.GetValue() == service {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no shield_control_depth{service=%q}", service)
	return 0
}

// TestControlDepthGauge: shield_control_depth{service} shows the session
// lifecycle messages waiting while the service's VM is busy (20 logins
// bound to hall and closed while hall spins: their client_bound and
// client_disconnected wait), and falls back to 0 once it has served them.
func TestControlDepthGauge(t *testing.T) {
	srv := startContract(t, "")
	if d := controlDepth(t, srv.Server, "hall"); d != 0 {
		t.Fatalf("idle hall: control depth %v", d)
	}
	spinner := srv.client(t, "idlen", client.Options{})
	call(t, spinner, cLogin, map[string]string{"user": "spinner"}, nil)
	spun := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		spun <- spinner.Call(ctx, cSpin, map[string]int{"ms": 3000}, nil)
	}()
	srv.Logs.WaitFor(t, "spinning")
	const n = 20
	for i := range n {
		w := srv.raw(t, "idlen")
		loginRaw(t, w, fmt.Sprintf("churn-%d", i))
		w.NC.Close()
	}
	wiretest.Eventually(t, "the lifecycle messages waiting on hall's control lane", func() bool {
		return controlDepth(t, srv.Server, "hall") >= n
	})
	if err := <-spun; err != nil {
		t.Fatalf("spin: %v", err)
	}
	wiretest.Eventually(t, "hall's control lane drained", func() bool {
		return controlDepth(t, srv.Server, "hall") == 0
	})
}
