package session

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
)

// room is a room actor (docs/rooms.md §3.1) for the tests below.
var room = egress.ActorID{Service: "arena", Instance: -1, Room: "arena/9f3c2a1b4d5e6f70@gw"}

// TestBindReturn checks a room join's bind and its bind back
// (docs/rooms.md §5.1): the join keeps the return target in the binding,
// only the room may then bind the session, and the bind back clears it.
func TestBindReturn(t *testing.T) {
	f := newFixture()
	s := f.add(1)
	ref, err := f.t.Bind(bindReq(s, 1, auth, "alice"), policy(true))
	wantCode(t, err, "")

	var seen []*egress.BindRequest
	p := Policy{KickOld: true, Bound: func(_ *Session, b Binding, req *egress.BindRequest) {
		if b.Target != req.Target || b.Return != req.Return {
			t.Errorf("Bound saw binding %+v for request %+v", b, req)
		}
		seen = append(seen, req)
	}}
	join := &egress.BindRequest{Ref: ref, PlayerID: "alice", Target: room, Caller: player, Return: player}
	ref, err = f.t.Bind(join, p)
	wantCode(t, err, "")
	if b := s.Binding(); b.Target != room || b.Return != player || b.Epoch != 3 || ref.Epoch != 3 {
		t.Fatalf("after the join: binding %+v, ref %+v", b, ref)
	}
	if f.owner("alice") != s {
		t.Fatal("the join lost the player index")
	}

	// Home is no longer the target: it may not bind the session back.
	_, err = f.t.Bind(&egress.BindRequest{Ref: ref, PlayerID: "alice", Target: player, Caller: player}, p)
	wantCode(t, err, codes.NotTarget)

	back := &egress.BindRequest{Ref: ref, PlayerID: "alice", Target: player, Caller: room, Left: "left"}
	ref, err = f.t.Bind(back, p)
	wantCode(t, err, "")
	if b := s.Binding(); b.Target != player || !b.Return.IsZero() || ref.Epoch != 4 {
		t.Fatalf("after the bind back: binding %+v, ref %+v", b, ref)
	}
	if len(seen) != 2 || seen[0] != join || seen[1] != back {
		t.Fatalf("Bound saw %v", seen)
	}

	// A close reports the binding, Return included, to the Closed hook,
	// which tells both targets (gateway/conn.go).
	ref, err = f.t.Bind(&egress.BindRequest{Ref: ref, PlayerID: "alice", Target: room, Caller: player, Return: player}, p)
	wantCode(t, err, "")
	s.Close(Closed, nil)
	if c := f.closed(); len(c) != 1 || c[0].binding.Return != player || c[0].binding.Target != room {
		t.Fatalf("closes %+v", c)
	}
}

// TestSuspendedBindKeepsToken: a bind renews a session's resume token, but
// a suspended session keeps its own, which its absent client needs to come
// back (docs/rooms.md §5.3: a room binds a member back after its grace).
func TestSuspendedBindKeepsToken(t *testing.T) {
	f := newFixture()
	s := f.add(1)
	first := f.t.IssueToken(s, "gw")
	second := f.t.RenewToken(s, "gw")
	if second == "" || second == first || f.t.ByToken(first) != nil || f.t.ByToken(second) != s {
		t.Fatalf("an attached session's renewal: %q after %q", second, first)
	}
	if !s.Suspend(s.Attachment(), Closed, time.Minute) {
		t.Fatal("Suspend refused")
	}
	defer s.Close(Closed, nil)
	if tok := f.t.RenewToken(s, "gw"); tok != "" {
		t.Fatalf("a suspended session got token %q", tok)
	}
	if f.t.ByToken(second) != s {
		t.Fatal("the suspended session's token no longer names it")
	}
}
