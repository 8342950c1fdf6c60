package acceptance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
)

// expectCode makes a request that must get an error frame with code and
// message.
func expectCode(t testing.TB, c *client.Client, route uint32, req any, code codes.Code, message string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Call(ctx, route, req, nil)
	var ce *codes.Error
	if !errors.As(err, &ce) || ce.Code != code || ce.Message != message {
		t.Fatalf("route %d %v: got %v, want %s: %s", route, req, err, code, message)
	}
}

// TestCodecSchemaViolation plays the example game on a json listener with
// configs/schemas: bodies that break a schema are refused before the
// handler with SPEC §6's "<pointer>: <reason>"; good ones play as usual.
func TestCodecSchemaViolation(t *testing.T) {
	g := startCodecGame(t, codecGameConfig(t, true, codecListener{"web", "idlen", "json"}))
	c := g.dialCodec(t, "web", "idlen")

	expectCode(t, c, routeLogin, map[string]any{}, codes.SchemaViolation, "/: missing properties: 'user'")
	expectCode(t, c, routeLogin, map[string]any{"user": ""}, codes.SchemaViolation, "/user: length must be >= 1, but got 0")
	login(t, c, "sam")
	expectCode(t, c, routeJoinRoom, []byte(`["lobby"]`), codes.SchemaViolation, "/: expected object, but got array")
	call(t, c, routeJoinRoom, map[string]string{"room": "schemas"}, nil)

	// A bad move: both x and y fail; the smaller pointer is reported.
	expectCode(t, c, routeMove, map[string]any{"x": "far", "y": true}, codes.SchemaViolation, "/x: expected number, but got string")
	expectCode(t, c, routeMove, map[string]any{"x": 1}, codes.SchemaViolation, "/: missing properties: 'y'")
	expectCode(t, c, routeMove, map[string]any{"x": 1e6, "y": 0}, codes.SchemaViolation, "/x: must be <= 100000 but found 1000000")
	var moved map[string]any
	call(t, c, routeMove, map[string]any{"x": 1, "y": 2}, &moved)
}

// TestCodecSchemaNonJSONReachesHandler: SPEC §2, with json a body that is
// not JSON reaches the handler as a string, never as decode_failed; and a
// route with a schema validates it as that string (SPEC §6), the empty
// body as null.
func TestCodecSchemaNonJSONReachesHandler(t *testing.T) {
	g := startCodecGame(t, codecGameConfig(t, true, codecListener{"web", "idlen", "json"}))
	c := g.dialCodec(t, "web", "idlen")
	expectCode(t, c, routeLogin, []byte("not json"), codes.SchemaViolation, "/: expected object, but got string")
	expectCode(t, c, routeLogin, nil, codes.SchemaViolation, "/: expected object, but got null")
}

// TestCodecSchemaLegacyEnvelope: the legacy envelopes carry JSON wrappers;
// the payload is what the schema checks.
func TestCodecSchemaLegacyEnvelope(t *testing.T) {
	g := startCodecGame(t, codecGameConfig(t, true, codecListener{"lines", "delimiter", "json"}))
	c := g.dialCodec(t, "lines", "delimiter")
	expectCode(t, c, routeLogin, map[string]any{"user": 7}, codes.SchemaViolation, "/user: expected string, but got number")
	login(t, c, "lee")
}
