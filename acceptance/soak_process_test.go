package acceptance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/testutil"
)

// Routes of the soak beyond the example game's: the room's left push,
// and the kv probe (testdata/kv.lua) on a listener of its own.
const (
	soakRouteLeft = 2102
	soakRoutePut  = 1
	soakRouteGet  = 2
)

// The counts that fail the soak when they are not zero.
var soakViolations = []string{"hung", "kv hung", "wrong session", "push before join_room", "push from another room",
	"declared dead while starting", "healthy node declared dead"}

// TestProcessChaosSoak (issue 30 point 5, docs/cluster.md "Chaos") is
// TestChaosSoak with real processes and real signals: three clustered
// nats-servers with JetStream (storage.replicas: 3), gateways gw-a (auth)
// and gw-b (nothing), service nodes svc-1 (player/0, room) and svc-2
// (player/1 and the kv probe), each a child process. Logged-in clients in
// four rooms call move and profile while processes are killed (SIGKILL,
// then started again on the same config), paused (SIGSTOP for 1-3 s, then
// SIGCONT) and, in the long run, restarted (SIGTERM, or lame-duck mode
// for a nats-server).
//
// It fails when a call hangs past its deadline, an answer reaches another
// session, a client gets a push an egress check should have refused
// (before its connection sent join_room, or about a player of another
// room), an acknowledged kv write is lost, a node is declared dead that
// the fault did not cut off or that had not served yet, a process exits
// otherwise on its own, the cluster does not serve again after a fault, a
// client does not come back once it does, or a process that lived through
// every fault grew. The player's profile writes cannot be checked so (a
// move is answered even when its put failed: the game logs it and goes
// on), hence the probe, which writes each key once.
//
// The four nodes start at once, as a deployment starts them. The short
// run (go test) makes one fault of each kind with 40 clients in about 40
// s; SHIELD_PROCESS_SOAK=5m makes a fault every few seconds for that long
// with 200 clients (past 8m, raise go test's -timeout).
func TestProcessChaosSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("seven processes: three nats-servers, two gateways, two service nodes")
	}
	testutil.CheckGoroutines(t)
	long, _ := time.ParseDuration(os.Getenv("SHIELD_PROCESS_SOAK"))
	clients := 40
	if long > 0 {
		clients = 200
	}
	st := &soakStats{n: map[string]int64{}, first: map[string]string{}, fault: "none", faults: map[string]int{}, longest: map[string]time.Duration{},
		slowest: map[string]time.Duration{}, open: make([]time.Time, clients), openBy: make([]string, clients)}
	c := startSoakCluster(t, st)
	idle0 := c.sample()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	acked := map[string]int{} // the kv probe's acknowledged writes: key -> revision
	// A call's deadline is 20 s; a failed test stops its clients before its processes.
	stopClients := sync.OnceFunc(func() { close(stop); waitGroup(t, &wg, 40*time.Second, "the clients to stop") })
	t.Cleanup(stopClients)
	for i := range clients {
		wg.Go(func() { soakProcClient(i, c, st, stop) })
	}
	wg.Go(func() { soakKVWriter(c, st, stop, acked) })
	time.Sleep(3 * time.Second)
	load1 := c.sample()

	// Kills and restarts hit only the mortal processes, so that one of
	// each kind (svc-2, gw-b, nats-3) lives through the faults, paused at
	// most, to be measured for growth; pauses hit any process.
	pick := func(names ...string) *soakProc { return c.byName[names[rand.IntN(len(names))]] }
	mortal := []string{"svc-1", "gw-a", "nats-1", "nats-2"}
	if long == 0 {
		c.inject("kill", c.byName["svc-1"])
		c.inject("stop", c.byName["svc-2"])
		c.inject("kill", c.byName["gw-a"])
		c.inject("kill", pick("nats-1", "nats-2"))
		c.inject("stop", pick("nats-1", "nats-2", "nats-3"))
	}
	// The long run deals its faults from a shuffled deck of every kind on
	// every target it may hit, so that each comes up every 15 faults.
	var deck [][2]string
	for end := time.Now().Add(long); time.Now().Before(end); time.Sleep(time.Duration(1000+rand.IntN(3000)) * time.Millisecond) {
		if len(deck) == 0 {
			for _, p := range c.procs {
				if deck = append(deck, [2]string{"stop", p.name}); slices.Contains(mortal, p.name) {
					deck = append(deck, [2]string{"kill", p.name}, [2]string{"restart", p.name})
				}
			}
			rand.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		c.inject(deck[0][0], c.byName[deck[0][1]])
		deck = deck[1:]
	}
	load2 := c.sample()
	// A quiet period: a client still failing at its end did not come back
	// though the cluster was ready.
	quiet := time.Now()
	time.Sleep(5 * time.Second)
	stopClients()
	c.waitIdle()
	idle3 := c.sample()
	unread, lost := c.readBack(acked)

	t.Logf("%d clients, wall time %v (race detector in the test process: %v); faults: %s", clients,
		time.Since(c.began).Round(time.Second), raceEnabled, soakJoin(st.faults))
	t.Logf("counts: %s", soakJoin(st.n))
	t.Logf("longest unavailability a client saw, by the fault before it: %s", soakJoin(st.longest))
	t.Logf("slowest answer, by the fault before it: %s", soakJoin(st.slowest))
	t.Logf("the first of each outcome: %s", soakJoin(st.first))
	t.Logf("kv probe: %d writes acknowledged, %d lost, %d not readable", len(acked), lost, unread)
	for _, note := range st.notes {
		t.Logf("violation: %s", note)
	}
	for _, p := range c.procs {
		a, l1, l2, b := idle0[p.name], load1[p.name], load2[p.name], idle3[p.name]
		survivor := p.starts == 1 && a.pid == b.pid // of the first start, running still
		t.Logf("%-6s starts %d (%d after exiting on its own), survivor %v: RSS %.1f / %.1f / %.1f / %.1f MiB, goroutines %d / %d / %d / %d (idle before, loaded before the faults, loaded after, idle after)",
			p.name, p.starts, p.selfExit, survivor, a.rssKB/1024, l1.rssKB/1024, l2.rssKB/1024, b.rssKB/1024, a.goroutines, l1.goroutines, l2.goroutines, b.goroutines)
		if !survivor {
			continue
		}
		// Idle against idle: a gateway's goroutines follow its sessions,
		// and the clients move between gateways with the faults, so the
		// loaded figures do not compare. At rest a node's goroutines are
		// a fixed set (listeners, its NATS connection, its VMs, the admin
		// server), a nats-server's a few per connection and route: 20%
		// plus 50 absorbs a connection that moved and pools started on
		// first use, and no leak of one per session or request fits.
		if b.goroutines > a.goroutines*12/10+50 {
			t.Errorf("%s, never killed, grew from %d goroutines to %d at rest", p.name, a.goroutines, b.goroutines)
		}
		// Loaded against loaded, in the long run only: the first sample
		// comes seconds into the load, and a gateway's collector keeps a
		// 32 MiB heap floor it may not have filled by then.
		if long > 0 && l2.rssKB > 2*l1.rssKB+32*1024 {
			t.Errorf("%s, never killed, grew from %.1f MiB RSS to %.1f MiB under the same load", p.name, l1.rssKB/1024, l2.rssKB/1024)
		}
	}
	for _, k := range soakViolations {
		if n := st.n[k]; n != 0 {
			t.Errorf("%s: %d", k, n)
		}
	}
	if lost+unread != 0 || st.n["ok"] == 0 || len(acked) == 0 {
		t.Errorf("%d calls succeeded; %d kv writes acknowledged, %d of them lost, %d not readable", st.n["ok"], len(acked), lost, unread)
	}
	for i, at := range st.open {
		if !at.IsZero() && at.Before(quiet) {
			t.Errorf("soak-%d failed from %v (after %s) to the end, though the cluster had been ready for 5s", i, at.Sub(c.began).Round(time.Millisecond), st.openBy[i])
		}
	}
}

// readBack reads every acknowledged kv write back (a try that fails is
// made again on a fresh connection): each key was written once, so it
// must hold that write at the acknowledged revision.
func (c *soakCluster) readBack(acked map[string]int) (unread, lost int) {
	var cl *client.Client
	for key, rev := range acked {
		var got struct {
			Value *struct{ N int } `json:"value"`
			Rev   int              `json:"rev"`
		}
		err := errors.New("not read")
		for try := 0; try < 5 && err != nil; try++ {
			if cl == nil || try > 0 {
				if cl != nil {
					cl.Close()
					time.Sleep(200 * time.Millisecond)
				}
				if cl, err = soakDial(c.kv[try%2]); err != nil {
					continue
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = cl.Call(ctx, soakRouteGet, map[string]string{"key": key}, &got)
			cancel()
		}
		if n, _ := strconv.Atoi(key[1:]); err != nil {
			unread++
			c.t.Logf("kv %s unread: %v", key, err)
		} else if got.Value == nil || got.Value.N != n || got.Rev != rev {
			lost++
			c.t.Logf("kv %s acknowledged at revision %d, read back %+v at revision %d", key, rev, got.Value, got.Rev)
		}
	}
	if cl != nil {
		cl.Close()
	}
	return unread, lost
}

// soakStats is what the clients count, under mu.
type soakStats struct {
	mu      sync.Mutex
	n       map[string]int64 // outcomes (the kv probe's prefixed "kv "), pushes, violations
	fault   string           // the fault made last
	faults  map[string]int
	longest map[string]time.Duration // the longest run of failed calls a client saw, by the fault before its start
	slowest map[string]time.Duration // the slowest answer, by the fault before it
	open    []time.Time              // each client's run of failed calls, zero when none
	openBy  []string                 // and the fault before it began
	notes   []string                 // the first violations
	first   map[string]string        // where each outcome came first
}

func (s *soakStats) add(k string) { s.mu.Lock(); s.n[k]++; s.mu.Unlock() }

func (s *soakStats) get(k string) int64 { s.mu.Lock(); defer s.mu.Unlock(); return s.n[k] }

// violation counts k and keeps the first few descriptions.
func (s *soakStats) violation(k, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[k]++; len(s.notes) < 20 {
		s.notes = append(s.notes, fmt.Sprintf("%s: %s (after %s)", k, fmt.Sprintf(format, args...), s.fault))
	}
}

// outcome counts one call of client i (-1: the kv probe) that took took,
// as soakClient does, and follows the client's run of failed calls.
func (s *soakStats) outcome(i int, route uint32, prefix string, err error, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ce *codes.Error
	k := "ok"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		k = "hung"
	case errors.As(err, &ce):
		k = string(ce.Code)
	case err != nil:
		k = "connection closed"
	}
	if _, seen := s.first[prefix+k]; !seen {
		s.first[prefix+k] = fmt.Sprintf("route %d after %s, in %v", route, s.fault, took.Round(time.Millisecond))
	}
	if s.n[prefix+k]++; err == nil || ce != nil {
		s.slowest[s.fault] = max(s.slowest[s.fault], took)
	}
	switch {
	case i < 0:
	case err == nil && !s.open[i].IsZero():
		s.longest[s.openBy[i]] = max(s.longest[s.openBy[i]], time.Since(s.open[i]))
		s.open[i] = time.Time{}
	case err != nil && s.open[i].IsZero():
		s.open[i], s.openBy[i] = time.Now(), s.fault
	}
}

// soakProcClient is soakClient (cluster/soak_test.go) on a real gateway:
// it logs in as soak-<i> on alternate gateways, joins room r<i%4>, and
// moves and asks for its profile until stop, logging in again whenever
// its session ends. It judges every position and left push too: one that
// comes before the connection sent join_room, or names a player of
// another room, is one an egress check should have refused.
func soakProcClient(i int, c *soakCluster, st *soakStats, stop chan struct{}) {
	user, room := fmt.Sprintf("soak-%d", i), fmt.Sprintf("r%d", i%4)
	call := func(cl *client.Client, route uint32, req, resp any) error {
		// Past the server's own bound (handler_timeout 15s) plus a pause
		// (3s at most): a call still unanswered then was lost.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		err := cl.Call(ctx, route, req, resp)
		st.outcome(i, route, "", err, time.Since(start))
		return err
	}
	for n := 0; !soakStopped(stop); n++ {
		cl, err := soakDial(c.game[(i+n)%2])
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		joinSent := make(chan struct{})
		sendingJoin := sync.OnceFunc(func() { close(joinSent) })
		judge := func(route string) func([]byte) {
			return func(body []byte) {
				st.add("push " + route)
				var p struct {
					PlayerID string `json:"player_id"`
				}
				_ = json.Unmarshal(body, &p)
				j, err := strconv.Atoi(strings.TrimPrefix(p.PlayerID, "soak-"))
				if !soakStopped(joinSent) {
					st.violation("push before join_room", "%s %s to %s, its connection %d", route, body, user, n)
				} else if err != nil || j%4 != i%4 {
					st.violation("push from another room", "%s %s to %s of room %s", route, body, user, room)
				}
			}
		}
		cl.OnPush(routePosition, judge("position"))
		cl.OnPush(soakRouteLeft, judge("left"))
		var login, p struct {
			PlayerID string `json:"player_id"`
		}
		if err = call(cl, routeLogin, map[string]string{"user": user}, &login); err == nil && login.PlayerID != user {
			st.violation("wrong session", "the login of %s answered %q", user, login.PlayerID)
		}
		for joined := false; err == nil && !soakStopped(stop); {
			if !joined {
				sendingJoin()
				err = call(cl, routeJoinRoom, map[string]string{"room": room}, nil)
				joined = err == nil
				continue
			}
			if err = call(cl, routeMove, map[string]int{"x": i, "y": n}, nil); err != nil {
				var ce *codes.Error
				if errors.As(err, &ce) && !strings.HasPrefix(string(ce.Code), "client_rpc.") && !strings.HasPrefix(string(ce.Code), "session.") {
					err, joined = nil, false // the game's own error (a restarted player VM forgot the room): join again
				}
				continue
			}
			if err = call(cl, routeProfile, struct{}{}, &p); err == nil && p.PlayerID != user {
				st.violation("wrong session", "the profile of %s answered for %q", user, p.PlayerID)
			}
			time.Sleep(20 * time.Millisecond)
		}
		cl.Close()
		if !soakStopped(stop) {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// soakKVWriter puts w<k> = {n: k} through the kv probe, each key once, on
// alternate gateways, until stop; acked gets each acknowledged revision.
func soakKVWriter(c *soakCluster, st *soakStats, stop chan struct{}, acked map[string]int) {
	for n, k := 0, 0; !soakStopped(stop); n++ {
		cl, err := soakDial(c.kv[n%2])
		for ; err == nil || errors.As(err, new(*codes.Error)); time.Sleep(20 * time.Millisecond) {
			if soakStopped(stop) {
				break
			}
			k++
			var r struct {
				Rev int `json:"rev"`
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			start := time.Now()
			err = cl.Call(ctx, soakRoutePut, map[string]any{"key": fmt.Sprintf("w%d", k), "value": map[string]int{"n": k}}, &r)
			cancel()
			if st.outcome(-1, soakRoutePut, "kv ", err, time.Since(start)); err == nil {
				acked[fmt.Sprintf("w%d", k)] = r.Rev
			}
		}
		if cl != nil {
			cl.Close()
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// soakDial connects to a gateway, giving up after two seconds.
func soakDial(addr string) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return client.Dial(ctx, addr, client.Options{})
}

// soakStopped says whether ch is closed.
func soakStopped(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// soakJoin is m as "key value" pairs in the keys' order.
func soakJoin[V any](m map[string]V) string {
	var out []string
	for k, v := range m {
		if d, ok := any(v).(time.Duration); ok {
			out = append(out, fmt.Sprintf("%s %v", k, d.Round(time.Millisecond)))
			continue
		}
		out = append(out, fmt.Sprintf("%s %v", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
