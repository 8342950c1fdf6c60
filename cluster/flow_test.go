package cluster_test

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/testutil"
)

// freePort is a loopback port free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// pushes collects the bodies pushed to one client.
type pushes struct {
	mu     sync.Mutex
	bodies []string
}

func (p *pushes) add(b []byte) {
	p.mu.Lock()
	p.bodies = append(p.bodies, string(b))
	p.mu.Unlock()
}

func (p *pushes) has(body string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.bodies {
		if b == body {
			return true
		}
	}
	return false
}

// threeNodes starts gateway A (embedded NATS, hosting auth and front),
// gateway B (hosting nothing) and service node S (player, room, calc).
func threeNodes(t *testing.T) (a, b, s *node) {
	t.Helper()
	port := freePort(t)
	a = startNode(t, nodeSpec{name: "gw-a", services: "[auth, front]", gateway: true,
		cluster: fmt.Sprintf("embedded: 127.0.0.1:%d", port)})
	nats := fmt.Sprintf("nats: nats://127.0.0.1:%d", port)
	b = startNode(t, nodeSpec{name: "gw-b", services: "[]", gateway: true, cluster: nats})
	s = startNode(t, nodeSpec{name: "svc", services: "[player, room, calc]", cluster: nats})
	waitReady(t, a, b, s)
	return a, b, s
}

// TestCrossNodeGame plays the example game across three nodes: alice
// logs in on gateway A (auth on A binds her to a player VM on S), bob on
// gateway B (whose login runs on A, over NATS); both join one room on S,
// and each move is pushed to both gateways.
func TestCrossNodeGame(t *testing.T) {
	testutil.CheckGoroutines(t)
	a, b, _ := threeNodes(t)
	alice, bob := dial(t, a, "game"), dial(t, b, "game")
	var aliceSaw, bobSaw pushes
	alice.OnPush(routePosition, aliceSaw.add)
	bob.OnPush(routePosition, bobSaw.add)
	login(t, alice, "alice")
	login(t, bob, "bob")
	room := map[string]string{"room": "lobby"}
	call(t, alice, routeJoinRoom, room, nil)
	var joined struct{ Members int }
	call(t, bob, routeJoinRoom, room, &joined)
	if joined.Members != 2 {
		t.Fatalf("members = %d, want 2", joined.Members)
	}
	call(t, alice, routeMove, map[string]int{"x": 1, "y": 2}, nil)
	call(t, bob, routeMove, map[string]int{"x": 3, "y": 4}, nil)
	for _, w := range []struct {
		who  *pushes
		body string
	}{
		{&bobSaw, `{"player_id":"alice","x":1,"y":2}`},
		{&aliceSaw, `{"player_id":"bob","x":3,"y":4}`},
		{&aliceSaw, `{"player_id":"alice","x":1,"y":2}`},
		{&bobSaw, `{"player_id":"bob","x":3,"y":4}`},
	} {
		within(t, 3*time.Second, "push "+w.body, func() bool { return w.who.has(w.body) })
	}
	// A gateway-less request on an authenticated route: the edge of B
	// validates against the whole table.
	if err := try(dial(t, b, "game"), routeMove, map[string]int{"x": 1}, nil); err == nil {
		t.Fatal("move before login answered")
	}
}

// TestCallsBetweenNodes: shield.call from front (A) to calc (S) returns
// results, raises business errors and handler failures, carries the
// caller's remaining budget, and times out within it; shield.send
// arrives in order.
func TestCallsBetweenNodes(t *testing.T) {
	testutil.CheckGoroutines(t)
	a, _, _ := threeNodes(t)
	c := dial(t, a, "front")
	type result struct {
		OK      bool   `json:"ok"`
		Value   any    `json:"value"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	do := func(method string, arg any) result {
		t.Helper()
		var r result
		call(t, c, routeCall, map[string]any{"method": method, "arg": arg}, &r)
		return r
	}
	if r := do("add", map[string]int{"a": 2, "b": 40}); !r.OK || r.Value != float64(42) {
		t.Errorf("add: %+v", r)
	}
	if r := do("fail", nil); r.OK || r.Code != "calc.bad_input" || r.Message != "nope" {
		t.Errorf("fail: %+v", r)
	}
	if r := do("crash", nil); r.OK || r.Code != string(codes.HandlerFailed) {
		t.Errorf("crash: %+v", r)
	}
	if r := do("nosuch", nil); r.OK || r.Code != string(codes.Unavailable) {
		t.Errorf("nosuch: %+v", r)
	}
	// front's handler_timeout is 2s: the callee's deadline is the caller's.
	if r := do("budget", nil); !r.OK || r.Value.(float64) > 2000 || r.Value.(float64) < 1000 {
		t.Errorf("budget: %+v, want 1000..2000 ms left", r)
	}
	// The callee runs under the caller's budget: both end together, and
	// the client gets the timeout.
	start := time.Now()
	if err := try(c, routeCall, map[string]any{"method": "slow", "arg": 5000}, nil); codeOf(err) != codes.Timeout {
		t.Errorf("slow: %v, want %s", err, codes.Timeout)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("slow call took %v, want about front's 2s budget", d)
	}
	for i := range 20 {
		var r struct {
			Sent bool   `json:"sent"`
			Code string `json:"code"`
		}
		call(t, c, routeSend, map[string]any{"method": "note", "arg": i}, &r)
		if !r.Sent {
			t.Fatalf("send %d refused: %+v", i, r)
		}
	}
	var want []any
	for i := range 20 {
		want = append(want, float64(i))
	}
	within(t, 3*time.Second, "sends in order", func() bool {
		r := do("notes", nil)
		return r.OK && fmt.Sprint(r.Value) == fmt.Sprint(want)
	})
}
