package acceptance

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// pushes collects the bodies pushed on one route.
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

func login(t testing.TB, c *client.Client, user string) {
	t.Helper()
	var resp struct {
		PlayerID string `json:"player_id"`
	}
	call(t, c, routeLogin, map[string]string{"user": user}, &resp)
	if resp.PlayerID != user {
		t.Fatalf("login %s: player_id %q", user, resp.PlayerID)
	}
}

// TestGameOverEveryEnvelope plays the example game: log in, join a room,
// move, and see the move pushed, with the route id in the header and a
// pure business body.
func TestGameOverEveryEnvelope(t *testing.T) {
	g := startGame(t, "")
	for _, env := range envelopes {
		t.Run(env, func(t *testing.T) {
			alice, bob := g.dial(t, env), g.dial(t, env)
			var seen pushes
			bob.OnPush(routePosition, seen.add)
			login(t, alice, "alice-"+env)
			login(t, bob, "bob-"+env)
			room := map[string]string{"room": "lobby-" + env}
			call(t, alice, routeJoinRoom, room, nil)
			var joined struct{ Members int }
			call(t, bob, routeJoinRoom, room, &joined)
			if joined.Members != 2 {
				t.Fatalf("members = %d, want 2", joined.Members)
			}
			var moved map[string]any
			call(t, alice, routeMove, map[string]int{"x": 1, "y": 2}, &moved)
			want := fmt.Sprintf(`{"player_id":"alice-%s","x":1,"y":2}`, env)
			wiretest.Eventually(t, "bob sees alice move", func() bool { return seen.has(want) })
		})
	}
}

// TestEdgeDrops: an unknown route, a server-to-client route sent by a
// client and a route that needs a login get no answer and are counted; the
// session goes on.
func TestEdgeDrops(t *testing.T) {
	g := startGame(t, "")
	c := g.dial(t, "idlen")
	for _, tc := range []struct {
		route  uint32
		reason string
	}{
		{4242, "route_not_found"},
		{routePosition, "direction_rejected"},
		{routeMove, "not_authenticated"},
	} {
		before := g.Dropped(tc.reason)
		expectNoAnswer(t, c, tc.route, map[string]int{"x": 1}, 300*time.Millisecond)
		if got := g.Dropped(tc.reason); got != before+1 {
			t.Errorf("%s: counter %v -> %v, want +1", tc.reason, before, got)
		}
	}
	login(t, c, "carol")
}

// TestStalePush: a push to a ref of an old epoch is refused.
func TestStalePush(t *testing.T) {
	g := startGame(t, "")
	c := g.dial(t, "probe")
	var got struct {
		First  any `json:"first"`
		Second any `json:"second"`
		Epoch  int `json:"epoch"`
	}
	call(t, c, routeStale, map[string]string{"user": "dave"}, &got)
	if got.First != string(codes.EpochExpired) || got.Second != true || got.Epoch != 3 {
		t.Fatalf("got %+v", got)
	}
}

// TestDuplicateLoginKicksOld: the old session gets session.kicked and is
// closed; the new one plays on.
func TestDuplicateLoginKicksOld(t *testing.T) {
	g := startGame(t, "")
	old, cur := g.dial(t, "idlen"), g.dial(t, "idlen")
	notices := make(chan string, 1)
	old.OnNotice(func(code, _ string) { notices <- code })
	login(t, old, "erin")
	login(t, cur, "erin")
	select {
	case code := <-notices:
		if code != string(codes.SessionKicked) {
			t.Fatalf("notice %q", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notice")
	}
	select {
	case <-old.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("old session not closed")
	}
	call(t, cur, routeJoinRoom, map[string]string{"room": "r"}, nil)
}

// TestLeaveOfAnotherSession (README "Ordering between services"): a
// room's leave for a player's other session (the old one of a player who
// logged in again, arriving after the new one joined) leaves the member;
// the member's own session's end removes it, and the others hear so.
func TestLeaveOfAnotherSession(t *testing.T) {
	g := startGame(t, "")
	alice, bob, probe := g.dial(t, "idlen"), g.dial(t, "idlen"), g.dial(t, "probe")
	login(t, alice, "alice")
	login(t, bob, "bob")
	moved, left := make(chan []byte, 16), make(chan []byte, 16)
	alice.OnPush(routePosition, func(b []byte) { moved <- b })
	bob.OnPush(2102, func(b []byte) { left <- b })
	call(t, alice, routeJoinRoom, map[string]string{"room": "lr"}, nil)
	call(t, bob, routeJoinRoom, map[string]string{"room": "lr"}, nil)
	call(t, probe, routeLeave, map[string]any{"room": "lr", "player_id": "alice", "session_id": 1 << 40, "gateway": "bench"}, nil)
	call(t, bob, routeMove, map[string]int{"x": 1, "y": 2}, nil)
	select {
	case <-moved:
	case b := <-left:
		t.Fatalf("a leave of another session removed alice: %s", b)
	case <-time.After(5 * time.Second):
		t.Fatal("alice, still in the room, got no position push")
	}
	alice.Close()
	select {
	case b := <-left:
		if !strings.Contains(string(b), `"alice"`) {
			t.Fatalf("left push %s", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("bob did not hear that alice left")
	}
}

// TestGarbageClosesOnlyItsConnection: a client that sends garbage is closed
// and counted; others go on.
func TestGarbageClosesOnlyItsConnection(t *testing.T) {
	g := startGame(t, "")
	good := g.dial(t, "idlen")
	login(t, good, "frank")
	// "GET " read as an idlen length is 1.2 GB: too_large, before any
	// allocation.
	before := g.ProtocolErrors("too_large")
	nc, err := net.Dial("tcp", g.Addr("idlen"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("want the gateway to close the connection, got %v", err)
	}
	if got := g.ProtocolErrors("too_large"); got != before+1 {
		t.Errorf("too_large %v -> %v", before, got)
	}
	call(t, good, routeJoinRoom, map[string]string{"room": "r"}, nil)
}

// TestPipelinedRequests: 100 requests written at once on one connection
// get exactly one answer each.
func TestPipelinedRequests(t *testing.T) {
	g := startGame(t, "  max_inflight: 128")
	nc, err := net.Dial("tcp", g.Addr("probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var buf []byte
	for id := uint32(1); id <= 100; id++ {
		body := []byte(fmt.Sprintf(`{"n":%d}`, id))
		buf = binary.BigEndian.AppendUint32(buf, uint32(8+len(body)))
		buf = append(buf, 1, 0, byte(routeEcho>>8), byte(routeEcho&0xff))
		buf = binary.BigEndian.AppendUint32(buf, id)
		buf = append(buf, body...)
	}
	if _, err := nc.Write(buf); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	seen := map[uint32]bool{}
	for len(seen) < 100 {
		var hdr [12]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			t.Fatalf("after %d answers: %v", len(seen), err)
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		id := binary.BigEndian.Uint32(hdr[8:])
		body := make([]byte, n-8)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatal(err)
		}
		if seen[id] || string(body) != fmt.Sprintf(`{"n":%d}`, id) {
			t.Fatalf("answer %d: duplicate=%v body %s", id, seen[id], body)
		}
		seen[id] = true
	}
	// No extra answer follows.
	nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := br.ReadByte(); !errors.Is(err, timeoutErr(err)) {
		t.Fatalf("extra bytes after 100 answers: %v", err)
	}
}

func timeoutErr(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return errors.New("not a timeout")
}
