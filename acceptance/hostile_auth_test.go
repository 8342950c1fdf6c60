package acceptance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/config"
)

// The auth flood: unbound sessions sending login requests as large as
// session.auth_max_frame_bytes allows, as fast as they are answered.
// Before the fixes of issue 19, 36 of them sending 64 KiB bodies pushed a
// bystander's login from about a millisecond to 1.9 s (3.9 s with the
// login schema).

// authFloodSessions is the red team's count.
const authFloodSessions = 36

// loginLatencies logs n fresh sessions in, one after another, on route
// login as users prefix-i, and returns each login's latency (the dial is
// not counted), sorted.
func loginLatencies(t testing.TB, addr string, route uint32, prefix string, n int) []time.Duration {
	t.Helper()
	lat := make([]time.Duration, 0, n)
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := client.Dial(ctx, addr, client.Options{HeartbeatEvery: -1})
		if err != nil {
			cancel()
			t.Fatalf("bystander dial: %v", err)
		}
		start := time.Now()
		err = c.Call(ctx, route, map[string]string{"user": fmt.Sprintf("%s-%d", prefix, i)}, nil)
		lat = append(lat, time.Since(start))
		c.Close()
		cancel()
		if err != nil {
			t.Fatalf("bystander login %d: %v", i, err)
		}
	}
	slices.Sort(lat)
	return lat
}

// quantile is the q quantile of sorted latencies.
func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// exampleEntry is the example game's actors (configs/actors.yaml's
// actors block) as the hostile gateway's, with extra session keys.
func exampleEntry(t testing.TB, session string) hostileSetup {
	t.Helper()
	services, err := filepath.Abs("../configs/services")
	if err != nil {
		t.Fatal(err)
	}
	if session != "" {
		session = ", " + session
	}
	return hostileSetup{actors: exampleActors(services), entry: "auth", session: "idle_timeout: 60s" + session}
}

// floodWindow is how many requests each flood session keeps outstanding:
// SPEC §5 lets one of an unbound session's requests into its service at a
// time, and holds the rest in arrival order.
const floodWindow = 8

// authFlood runs sessions unbound sessions, each keeping floodWindow
// copies of frame (a whole request) outstanding, sending one more for
// each answer, until stop is closed; wait waits for them to stop. The
// counts say how many answers the sessions got and how many connections
// the gateway closed (a session whose connection is closed stops).
func authFlood(t testing.TB, addr string, sessions int, frame []byte, stop <-chan struct{}) (answers, closed *atomic.Int64, wait func()) {
	t.Helper()
	conns := dialMany(t, addr, sessions)
	answers, closed = new(atomic.Int64), new(atomic.Int64)
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReader(c)
			c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := c.Write(bytes.Repeat(frame, floodWindow)); err != nil {
				closed.Add(1)
				return
			}
			for {
				c.SetDeadline(time.Now().Add(20 * time.Second))
				if _, _, _, err := readIdlen(br); err != nil {
					closed.Add(1)
					return
				}
				answers.Add(1)
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Write(frame); err != nil {
					closed.Add(1)
					return
				}
			}
		}()
	}
	return answers, closed, wg.Wait
}

// floodRun is a bystander's logins during one flood.
type floodRun struct {
	lat     []time.Duration // sorted
	answers int64           // the flood's answers meanwhile
	took    time.Duration
	closed  int64 // flood sessions the gateway closed
}

// serviceTime is how long the entry VM took per flood request: with the
// VM the bottleneck, the phase's length over its answers.
func (r floodRun) serviceTime() time.Duration {
	return r.took / time.Duration(max(r.answers, 1))
}

func (r floodRun) String() string {
	return fmt.Sprintf("p50 %v p99 %v (%d flood answers in %v, %v each)",
		quantile(r.lat, .5), quantile(r.lat, .99), r.answers, r.took.Round(time.Millisecond), r.serviceTime())
}

// underFlood measures logins bystander logins on route while
// authFloodSessions sessions flood the gateway with frame, and stops the
// flood.
func underFlood(t *testing.T, h *hostileProc, route uint32, frame []byte, prefix string, logins int) floodRun {
	t.Helper()
	stop := make(chan struct{})
	answers, closed, wait := authFlood(t, h.game, authFloodSessions, frame, stop)
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			wait()
		}
	}()
	// The flood is on once its sessions have been answered a few times
	// each, or off once all are closed (a frame over the cap is never
	// answered).
	pollFor(patience, func() bool {
		return answers.Load() >= 3*authFloodSessions || closed.Load() == authFloodSessions
	})
	a0, t0 := answers.Load(), time.Now()
	lat := loginLatencies(t, h.game, route, prefix, logins)
	r := floodRun{lat: lat, answers: answers.Load() - a0, took: time.Since(t0)}
	close(stop)
	stopped = true
	wait()
	r.closed = closed.Load()
	return r
}

// numbersBody is a JSON array of small numbers exactly n bytes long (n at
// least 3): the costliest body per byte for a VM to decode.
func numbersBody(n int) string {
	k := (n - 3) / 2
	return "[" + strings.Repeat("1,", k) + strings.Repeat("1", 1+(n-3)%2) + "]"
}

// floodFrame is a login request whose frame is size bytes (header and
// body, what auth_max_frame_bytes caps).
func floodFrame(route uint32, size int) []byte {
	return idlenFrame(route, 1, numbersBody(size-8))
}

// TestAuthFloodBystanderLogin (issue 19, SPEC §3, §5): 36 unbound sessions
// flooding the example game's entry service (configs/services/auth.lua)
// with login requests as large as session.auth_max_frame_bytes allows.
//
// With the SPEC's defaults (8 KiB), a bystander's login waits behind at
// most one request of each flooding session, however many each sends:
// its latency stays within idle + twice sessions x the VM's time per
// flood request (measured in the same run), where the red team's
// pipelined 64 KiB bodies cost it 1.9 s. It does not stay within 5x of
// its idle value: decoding 8 KiB takes the VM about 250 us, and 36 of
// them queue ahead.
//
// With the example game's own config (configs/actors.yaml, which lowers
// auth_max_frame_bytes to what a login needs), the same attack is closed
// as too_large at its first frame, and the largest flood let in leaves the
// bystander's login within 5x of what the same sessions cost it with
// empty requests (the price of 36 busy sessions on the machine, which no
// frame rule removes). A 64 KiB request before login is closed as
// too_large in both.
func TestAuthFloodBystanderLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood against a gateway process")
	}
	if raceEnabled {
		t.Skip("latencies: under the race detector they measure the detector in the bystander and the flood")
	}
	const logins = 200
	// A latency bound under load is a poll: up to three windows of 200
	// logins each, the first that keeps the bound passes; one window
	// slowed by another process on a shared machine is noise.
	const windows = 3
	t.Run("defaults", func(t *testing.T) {
		h := startHostile(t, exampleEntry(t, ""), procOptions{})
		loginLatencies(t, h.game, routeLogin, "warm", 20)
		idle := loginLatencies(t, h.game, routeLogin, "idle", logins)
		var failures []string
		for w := range windows {
			flood := underFlood(t, h, routeLogin, floodFrame(routeLogin, 8192), fmt.Sprintf("flooded%d", w), logins)
			t.Logf("bystander login idle p50 %v p99 %v; under %d sessions of 8 KiB logins %s",
				quantile(idle, .5), quantile(idle, .99), authFloodSessions, flood)
			if flood.closed != 0 {
				t.Fatalf("%d flood sessions were closed: 8 KiB frames are within auth_max_frame_bytes", flood.closed)
			}
			failures = failures[:0]
			ahead := authFloodSessions * flood.serviceTime()
			if got, limit := quantile(flood.lat, .5), quantile(idle, .5)+2*ahead; got > limit {
				failures = append(failures, fmt.Sprintf("bystander login p50 %v, over idle + 2 x %d flood requests (%v): it waited behind more than one per session",
					got, authFloodSessions, limit))
			}
			if got, limit := quantile(flood.lat, .99), quantile(idle, .99)+4*ahead; got > limit {
				failures = append(failures, fmt.Sprintf("bystander login p99 %v, over idle + 4 x %d flood requests (%v)", got, authFloodSessions, limit))
			}
			if len(failures) == 0 {
				break
			}
		}
		for _, f := range failures {
			t.Errorf("in each of %d windows; the last: %s", windows, f)
		}
		expectTooLarge(t, h, routeLogin, 65536)
	})
	t.Run("example game", func(t *testing.T) {
		cfg, err := config.Load("../configs/actors.yaml")
		if err != nil {
			t.Fatal(err)
		}
		capBytes := cfg.Session.AuthFrameLimit(cfg.Network.Listeners[0].Protocol.MaxFrameBytes)
		if capBytes >= 8192 {
			t.Fatalf("configs/actors.yaml: auth_max_frame_bytes %d, want below the default 8192", capBytes)
		}
		h := startHostile(t, exampleEntry(t, fmt.Sprintf("auth_max_frame_bytes: %d", capBytes)), procOptions{})
		loginLatencies(t, h.game, routeLogin, "warm", 20)
		idle := loginLatencies(t, h.game, routeLogin, "idle", logins)
		tooLarge := h.metric(t, `shield_protocol_errors_total{reason="too_large"}`)
		same := underFlood(t, h, routeLogin, floodFrame(routeLogin, 8192), "same", logins)
		t.Logf("bystander login idle p50 %v p99 %v; under 8 KiB logins %s", quantile(idle, .5), quantile(idle, .99), same)
		if same.closed != authFloodSessions {
			t.Errorf("%d of %d sessions sending 8 KiB frames closed, want all", same.closed, authFloodSessions)
		}
		if got := h.metric(t, `shield_protocol_errors_total{reason="too_large"}`); got != tooLarge+authFloodSessions {
			t.Errorf("too_large counted %v, want %v", got, tooLarge+authFloodSessions)
		}
		var failures []string
		for w := range windows {
			empty := underFlood(t, h, routeLogin, idlenFrame(routeLogin, 1, `{}`), fmt.Sprintf("empty%d", w), logins)
			largest := underFlood(t, h, routeLogin, floodFrame(routeLogin, capBytes), fmt.Sprintf("largest%d", w), logins)
			t.Logf("under empty logins %s; under %d-byte logins %s", empty, capBytes, largest)
			if largest.closed != 0 || empty.closed != 0 {
				t.Fatalf("%d + %d flood sessions within the cap were closed", largest.closed, empty.closed)
			}
			failures = failures[:0]
			for _, q := range []float64{.5, .99} {
				// The floor keeps a sub-millisecond value from making the
				// bound a matter of scheduler noise on a shared machine.
				if got, limit := quantile(largest.lat, q), 5*max(quantile(empty.lat, q), time.Millisecond); got > limit {
					failures = append(failures, fmt.Sprintf("bystander login p%.0f %v under the largest logins allowed, over 5x its %v under empty ones",
						100*q, got, quantile(empty.lat, q)))
				}
			}
			if len(failures) == 0 {
				break
			}
		}
		for _, f := range failures {
			t.Errorf("in each of %d windows; the last: %s", windows, f)
		}
		expectTooLarge(t, h, routeLogin, 65536)
	})
}

// expectTooLarge sends a login request of size bytes on a fresh
// connection: it is never answered, its connection is closed, and
// too_large counts it.
func expectTooLarge(t *testing.T, h *hostileProc, route uint32, size int) {
	t.Helper()
	tooLarge := h.metric(t, `shield_protocol_errors_total{reason="too_large"}`)
	nc := dialMany(t, h.game, 1)[0]
	nc.SetDeadline(time.Now().Add(patience))
	nc.Write(floodFrame(route, size))
	if _, _, body, err := readIdlen(bufio.NewReader(nc)); err == nil {
		t.Errorf("a %d-byte request before login was answered: %s", size, body)
	}
	if got := h.metric(t, `shield_protocol_errors_total{reason="too_large"}`); got != tooLarge+1 {
		t.Errorf("too_large counted %v, want %v", got, tooLarge+1)
	}
}

// TestAuthFrameCapJudgedOnArrival (SPEC §3): session.auth_max_frame_bytes
// holds a frame that arrives before the session has a player_id, also one
// pipelined behind the login, and not one sent after the login's answer.
// The read of the next frame begins before the login binds; the cap was
// once chosen then, which closed every logged-in client's first frame
// over 8 KiB as too_large.
func TestAuthFrameCapJudgedOnArrival(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a gateway process")
	}
	h := startHostile(t, hostileSetup{session: "auth_max_frame_bytes: 1024"}, procOptions{})
	big := idlenFrame(hEcho, 2, `{"pad":"`+strings.Repeat("x", 2000)+`"}`)

	c := dialMany(t, h.game, 1)[0]
	br := bufio.NewReader(c)
	c.SetDeadline(time.Now().Add(patience))
	c.Write(idlenFrame(hLogin, 1, `{"user":"after"}`))
	if route, _, body, err := readIdlen(br); err != nil || route != hLogin {
		t.Fatalf("login: %d %s %v", route, body, err)
	}
	c.Write(big)
	if route, id, body, err := readIdlen(br); err != nil || route != hEcho || id != 2 || len(body) < 2000 {
		t.Fatalf("a 2 KB frame after the login's answer: route %d id %d %d bytes %v", route, id, len(body), err)
	}

	tooLarge := h.metric(t, `shield_protocol_errors_total{reason="too_large"}`)
	p := dialMany(t, h.game, 1)[0]
	p.SetDeadline(time.Now().Add(patience))
	p.Write(append(idlenFrame(hLogin, 1, `{"user":"pipelined"}`), big...))
	pr := bufio.NewReader(p)
	for {
		route, _, _, err := readIdlen(pr)
		if err != nil {
			break // closed; the login's answer may or may not come first
		}
		if route == hEcho {
			t.Fatal("a 2 KB frame pipelined behind the login was served")
		}
	}
	if got := h.metric(t, `shield_protocol_errors_total{reason="too_large"}`); got != tooLarge+1 {
		t.Errorf("too_large counted %v, want %v", got, tooLarge+1)
	}
}
