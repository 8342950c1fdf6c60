package acceptance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// pbCall makes a request with a protobuf body and returns the response
// body, failing the test on an error frame.
func pbCall(t testing.TB, c *client.Client, route uint32, body []byte) []byte {
	t.Helper()
	var resp []byte
	call(t, c, route, body, &resp)
	return resp
}

// TestCodecProtobufGame plays the example game over a protobuf listener,
// with bodies written and read by protobuf-go from configs/proto/game.pb:
// log in, join a room, move, and see the position push.
func TestCodecProtobufGame(t *testing.T) {
	pb := loadGameProto(t)
	g := startCodecGame(t, codecGameConfig(t, false, codecListener{"pb", "idlen", "protobuf"}))
	alice, bob := g.dialCodec(t, "pb", "idlen"), g.dialCodec(t, "pb", "idlen")
	var seen bodies
	bob.OnPush(routePosition, seen.add)

	for _, user := range []string{"alice-pb", "bob-pb"} {
		c := alice
		if user == "bob-pb" {
			c = bob
		}
		resp := pbCall(t, c, routeLogin, pb.encode(t, "login", `{"user":"`+user+`"}`))
		if got := pb.decode(t, "login", resp); got != `{"player_id":"`+user+`"}` {
			t.Fatalf("login response %s", got)
		}
	}
	pbCall(t, alice, routeJoinRoom, pb.encode(t, "join_room", `{"room":"lobby-pb"}`))
	resp := pbCall(t, bob, routeJoinRoom, pb.encode(t, "join_room", `{"room":"lobby-pb"}`))
	if got := pb.decode(t, "join_room", resp); got != `{"room":"lobby-pb","members":2}` {
		t.Fatalf("join_room response %s", got)
	}
	// move returns {}: the empty message, no bytes.
	if resp := pbCall(t, alice, routeMove, pb.encode(t, "move", `{"x":1.5,"y":-2}`)); len(resp) != 0 {
		t.Fatalf("move response %x", resp)
	}
	want := `{"player_id":"alice-pb","x":1.5,"y":-2}`
	wiretest.Eventually(t, "bob sees alice move", func() bool {
		_, ok := seen.find(func(b []byte) bool { s, err := pb.tryDecode("position", b); return err == nil && s == want })
		return ok
	})
}

// TestCodecProtobufZeroMove: with explicit presence, a move to 0 reaches
// Lua as 0 and comes back in the push as 0.
func TestCodecProtobufZeroMove(t *testing.T) {
	pb := loadGameProto(t)
	g := startCodecGame(t, codecGameConfig(t, false, codecListener{"pb", "typelen", "protobuf"}))
	c := g.dialCodec(t, "pb", "typelen")
	var seen bodies
	c.OnPush(routePosition, seen.add)
	pbCall(t, c, routeLogin, pb.encode(t, "login", `{"user":"zed"}`))
	pbCall(t, c, routeJoinRoom, pb.encode(t, "join_room", `{"room":"zero"}`))
	pbCall(t, c, routeMove, pb.encode(t, "move", `{"x":0,"y":3}`))
	want := `{"player_id":"zed","x":0,"y":3}`
	wiretest.Eventually(t, "the push of a move to x=0", func() bool {
		_, ok := seen.find(func(b []byte) bool { s, err := pb.tryDecode("position", b); return err == nil && s == want })
		return ok
	})
}

// TestCodecProtobufDecodeFailed: a body that is not the route's message
// gets client_rpc.decode_failed; the session goes on.
func TestCodecProtobufDecodeFailed(t *testing.T) {
	pb := loadGameProto(t)
	g := startCodecGame(t, codecGameConfig(t, false, codecListener{"pb", "idlen", "protobuf"}))
	c := g.dialCodec(t, "pb", "idlen")
	for _, body := range [][]byte{
		{0xff, 0xff, 0xff},   // not the wire format
		{0x0a, 0x02, 0xc3},   // a string cut short
		{0x0a, 0x01, 0xff},   // user is not UTF-8
		[]byte(`{"user":1}`), // JSON, not protobuf
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.Call(ctx, routeLogin, body, nil)
		cancel()
		var ce *codes.Error
		if !errors.As(err, &ce) || ce.Code != codes.DecodeFailed {
			t.Fatalf("body %x: %v, want %s", body, err, codes.DecodeFailed)
		}
	}
	resp := pbCall(t, c, routeLogin, pb.encode(t, "login", `{"user":"after-garbage"}`))
	if got := pb.decode(t, "login", resp); got != `{"player_id":"after-garbage"}` {
		t.Fatalf("login after garbage: %s", got)
	}
}

// TestCodecProtobufBusinessErrorStaysJSON: error frames keep their JSON
// body on a protobuf listener (SPEC §8: error and notice bodies stay JSON).
func TestCodecProtobufBusinessErrorStaysJSON(t *testing.T) {
	pb := loadGameProto(t)
	g := startCodecGame(t, codecGameConfig(t, false, codecListener{"pb", "idlen", "protobuf"}))
	c := g.dialCodec(t, "pb", "idlen")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// An empty login message decodes to {}: auth rejects it with its own code.
	err := c.Call(ctx, routeLogin, pb.encode(t, "login", `{}`), nil)
	var ce *codes.Error
	if !errors.As(err, &ce) || ce.Code != "auth.bad_request" || ce.Message != "user is required" {
		t.Fatalf("got %v", err)
	}
}

// TestCodecMixedListenersPush: one push reaches a json session as JSON and
// a protobuf session as the position message, each in its listener's
// codec.
func TestCodecMixedListenersPush(t *testing.T) {
	pb := loadGameProto(t)
	g := startCodecGame(t, codecGameConfig(t, false,
		codecListener{"web", "idlen", "json"}, codecListener{"pb", "idlen", "protobuf"}))
	web, app := g.dialCodec(t, "web", "idlen"), g.dialCodec(t, "pb", "idlen")
	var webSeen, appSeen bodies
	web.OnPush(routePosition, webSeen.add)
	app.OnPush(routePosition, appSeen.add)
	login(t, web, "walt")
	pbCall(t, app, routeLogin, pb.encode(t, "login", `{"user":"ada"}`))
	call(t, web, routeJoinRoom, map[string]string{"room": "mixed"}, nil)
	pbCall(t, app, routeJoinRoom, pb.encode(t, "join_room", `{"room":"mixed"}`))
	pbCall(t, app, routeMove, pb.encode(t, "move", `{"x":4,"y":5}`))

	wiretest.Eventually(t, "the json session sees ada move in JSON", func() bool {
		_, ok := webSeen.find(func(b []byte) bool { return string(b) == `{"player_id":"ada","x":4,"y":5}` })
		return ok
	})
	wiretest.Eventually(t, "the protobuf session sees ada move in protobuf", func() bool {
		_, ok := appSeen.find(func(b []byte) bool {
			s, err := pb.tryDecode("position", b)
			return err == nil && s == `{"player_id":"ada","x":4,"y":5}`
		})
		return ok
	})
}
