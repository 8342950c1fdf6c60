package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/testutil"
)

// TestChaosSoak (issue 30, docs/cluster.md "Chaos"): two gateways, two
// service nodes splitting the player instances, three clustered NATS
// servers, logged-in clients in rooms calling move (a room push to every
// member) and profile, while service nodes, gateways and NATS servers are
// killed and restarted. Every call gets exactly one outcome within its
// deadline (none hangs), no answer reaches the wrong session, and the
// cluster serves again after each fault. The short run (go test) makes one
// fault of each kind with 40 clients; SHIELD_SOAK=10m runs that long with
// 200 clients and a random fault every few seconds.
func TestChaosSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of seven servers")
	}
	testutil.CheckGoroutines(t)
	long, _ := time.ParseDuration(os.Getenv("SHIELD_SOAK"))
	clients := 40
	if long > 0 {
		clients = 200
	}
	nc := startNATSCluster(t)
	urls := `nats: "` + strings.Join(nc.urls, ", ") + `"`
	sess := "auth_timeout: 300s\n  max_sessions: 10000"
	specs := map[string]nodeSpec{
		"gw-a":  {name: "gw-a", services: "[auth]", gateway: true, cluster: urls, session: sess},
		"gw-b":  {name: "gw-b", services: "[]", gateway: true, cluster: urls, session: sess},
		"svc-1": {name: "svc-1", services: "[player/0, room]", cluster: urls},
		"svc-2": {name: "svc-2", services: "[player/1]", cluster: urls},
	}
	var mu sync.Mutex // guards nodes, fault, faultAt
	nodes := map[string]*node{}
	for _, name := range []string{"gw-a", "gw-b", "svc-1", "svc-2"} {
		nodes[name] = startNode(t, specs[name])
	}
	waitReady(t, nodes["gw-a"], nodes["gw-b"], nodes["svc-1"], nodes["svc-2"])
	gateway := func(i int) string {
		mu.Lock()
		defer mu.Unlock()
		return nodes[[]string{"gw-a", "gw-b"}[i%2]].Addr("game")
	}

	var (
		outcomes  sync.Map // outcome -> *atomic.Int64
		wrong     atomic.Int64
		hung      atomic.Int64
		pushes    atomic.Int64
		fault     = "none"
		longest   = map[string]time.Duration{}
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		lastFault = func() string { mu.Lock(); defer mu.Unlock(); return fault }
	)
	count := func(k string) {
		v, _ := outcomes.LoadOrStore(k, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			soakClient(i, gateway, stop, count, &wrong, &hung, &pushes, func(d time.Duration, kind string) {
				mu.Lock()
				longest[kind] = max(longest[kind], d)
				mu.Unlock()
			}, lastFault)
		}()
	}

	kill := func(name string) {
		mu.Lock()
		n := nodes[name]
		fault = "kill " + name[:strings.IndexByte(name+"-", '-')]
		mu.Unlock()
		n.kill(t)
		time.Sleep(500 * time.Millisecond)
		restarted := startNode(t, specs[name])
		mu.Lock()
		nodes[name] = restarted
		mu.Unlock()
	}
	natsKill := func(i int) {
		mu.Lock()
		fault = "kill nats"
		mu.Unlock()
		nc.srvs[i].Shutdown()
		nc.srvs[i].WaitForShutdown()
		time.Sleep(500 * time.Millisecond)
		nc.start(i)
	}
	settle := func() {
		mu.Lock()
		all := []*node{nodes["gw-a"], nodes["gw-b"], nodes["svc-1"], nodes["svc-2"]}
		mu.Unlock()
		waitReady(t, all...)
		time.Sleep(time.Second) // the clients find their way back
	}
	time.Sleep(2 * time.Second)
	g0 := runtime.NumGoroutine()
	faults := []func(){func() { kill("svc-2") }, func() { natsKill(rand.IntN(3)) }, func() { kill("gw-b") }, func() { kill("svc-1") }}
	if long > 0 {
		for end := time.Now().Add(long); time.Now().Before(end); {
			faults[rand.IntN(len(faults))]()
			settle()
			time.Sleep(time.Duration(1+rand.IntN(4)) * time.Second)
		}
	} else {
		for _, f := range faults {
			f()
			settle()
		}
	}
	g1 := runtime.NumGoroutine()
	close(stop)
	wg.Wait()

	var report []string
	outcomes.Range(func(k, v any) bool {
		report = append(report, fmt.Sprintf("%s %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	sort.Strings(report)
	var lines []string
	for k, d := range longest {
		lines = append(lines, fmt.Sprintf("%s: %v", k, d.Round(time.Millisecond)))
	}
	sort.Strings(lines)
	t.Logf("%d clients; outcomes: %s; pushes received %d; goroutines %d before the faults, %d after", clients,
		strings.Join(report, ", "), pushes.Load(), g0, g1)
	t.Logf("longest unavailability a client saw, by the fault before it: %s", strings.Join(lines, "; "))
	if n := wrong.Load(); n != 0 {
		t.Errorf("%d answers reached the wrong session", n)
	}
	if n := hung.Load(); n != 0 {
		t.Errorf("%d calls got no answer within their deadline", n)
	}
	if v, ok := outcomes.Load("ok"); !ok || v.(*atomic.Int64).Load() == 0 {
		t.Error("no call succeeded")
	}
}

// soakClient logs in as soak-<i> on a gateway, joins a room, and moves
// and asks for its profile until stop, logging in again whenever its
// session ends. Each call's outcome is counted; a profile of another
// player is a wrong answer; a call without an answer by its deadline
// hung. onStreak reports how long a run of failed calls lasted, with the
// fault that came before it began.
func soakClient(i int, gateway func(int) string, stop chan struct{}, count func(string), wrong, hung, pushes *atomic.Int64,
	onStreak func(time.Duration, string), lastFault func() string) {
	user := fmt.Sprintf("soak-%d", i)
	var streakStart time.Time
	var streakFault string
	result := func(err error) {
		if err == nil {
			count("ok")
			if !streakStart.IsZero() {
				onStreak(time.Since(streakStart), streakFault)
				streakStart = time.Time{}
			}
			return
		}
		if streakStart.IsZero() {
			streakStart, streakFault = time.Now(), lastFault()
		}
		var ce *codes.Error
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			hung.Add(1)
			count("hung")
		case errors.As(err, &ce):
			count(string(ce.Code))
		default:
			count("connection closed")
		}
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	call := func(c *client.Client, route uint32, req, resp any) error {
		// Past the server's own bound (handler_timeout 15s plus a second):
		// a call still unanswered then was lost.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return c.Call(ctx, route, req, resp)
	}
	for n := 0; !stopped(); n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := client.Dial(ctx, gateway(i+n), client.Options{})
		cancel()
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		c.OnPush(routePosition, func([]byte) { pushes.Add(1) })
		var login struct {
			PlayerID string `json:"player_id"`
		}
		err = call(c, routeLogin, map[string]string{"user": user}, &login)
		result(err)
		if err == nil && login.PlayerID != user {
			wrong.Add(1)
		}
		joined := false
		for err == nil && !stopped() {
			if !joined {
				err = call(c, routeJoinRoom, map[string]string{"room": fmt.Sprintf("r%d", i%4)}, nil)
				result(err)
				joined = err == nil
				continue
			}
			if err = call(c, routeMove, map[string]int{"x": i, "y": n}, nil); err != nil {
				result(err)
				var ce *codes.Error
				if errors.As(err, &ce) && !strings.HasPrefix(string(ce.Code), "client_rpc.") && !strings.HasPrefix(string(ce.Code), "session.") {
					err, joined = nil, false // the game's own error (a restarted player VM forgot the room): join again
				}
				continue
			}
			result(nil)
			var p struct {
				PlayerID string `json:"player_id"`
			}
			err = call(c, routeProfile, struct{}{}, &p)
			result(err)
			if err == nil && p.PlayerID != user {
				wrong.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
		c.Close()
		if !stopped() {
			time.Sleep(50 * time.Millisecond)
		}
	}
}
