package acceptance

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestRoomMetrics is docs/rooms.md §13: a room's life on /metrics (the
// gauges, creates, joins, ticks, inputs, state frames and snapshots,
// leaves, the idle close, and a create past max_rooms) and on GET /admin/rooms.
func TestRoomMetrics(t *testing.T) {
	c := roomsConf{node: "gw-metrics", timeout: 20 * time.Second, strict: true,
		kinds: roomKind("arena", "rooms_arena.lua", "tick_hz: 20, max_rooms: 1, idle_close: 500ms", "{id: 3001, name: move, room_input: true}")}
	cfg := strings.Replace(c.yaml(), "network:\n", "network:\n  admin: {address: \"127.0.0.1:0\", token: s3cret}\n", 1)
	s := wiretest.Start(t, "shield.yaml", cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	t.Cleanup(cancel)
	g := &roomsRig{t: t, s: s, ctx: ctx, strict: true}
	admin := s.Srv.Admin.Addr()
	metric := func(name string) float64 { return scrape(t, admin, name) }

	alice := g.player("alice")
	room := g.makeOn(alice.c, "arena", map[string]string{"name": "pit"})
	var refused error
	if err := alice.c.Call(ctx, roomsMake, map[string]string{"name": "two"}, nil); err == nil {
		t.Fatal("a second room past max_rooms 1 was made")
	} else {
		refused = err
	}
	g.join(alice, room)
	for x := 1; x <= 3; x++ {
		if err := alice.c.Notify(3001, map[string]any{"x": x}); err != nil {
			t.Fatal(err)
		}
	}
	wiretest.Eventually(t, "alice's inputs applied", func() bool {
		st, _ := alice.state()
		pos, _ := st["pos"].(map[string]any)
		return pos["alice"] == int64(3)
	})

	for _, want := range []struct {
		name string
		min  float64
	}{
		{`shield_rooms{kind="arena"}`, 1},
		{`shield_room_members{kind="arena"}`, 1},
		{`shield_rooms_created_total{kind="arena",result="ok"}`, 1},
		{`shield_rooms_created_total{kind="arena",result="refused"}`, 1},
		{`shield_limits_hit_total{limit="max_rooms"}`, 1},
		{`shield_room_joins_total{kind="arena",result="ok"}`, 1},
		{`shield_room_ticks_total{kind="arena"}`, 1},
		{`shield_room_tick_lateness_seconds_count{kind="arena"}`, 1},
		{`shield_room_tick_seconds_count{kind="arena"}`, 1},
		{`shield_room_inputs_total{kind="arena"}`, 3},
		{`shield_room_state_frames_total{frame="snapshot",kind="arena"}`, 1},
		{`shield_room_state_frames_total{frame="delta",kind="arena"}`, 1},
		{`shield_room_state_bytes_total{frame="delta",kind="arena"}`, 1},
		{`shield_room_state_encodes_total{frame="snapshot",kind="arena"}`, 1},
		{`shield_room_snapshots_total{cause="join",kind="arena"}`, 1},
	} {
		if got := metric(want.name); got < want.min {
			t.Errorf("%s = %v, want at least %v (the create refused: %v)", want.name, got, want.min, refused)
		}
	}

	status, body := adminGet(t, admin, "/admin/rooms?kind=arena")
	var list struct {
		Rooms []struct {
			ID, Kind          string
			Members, Reserved int
			Tick              uint64
			CreatedAt         string `json:"created_at"`
		}
	}
	if err := json.Unmarshal([]byte(body), &list); status != 200 || err != nil || len(list.Rooms) != 1 {
		t.Fatalf("GET /admin/rooms: %d %s (%v)", status, body, err)
	}
	r := list.Rooms[0]
	if _, err := time.Parse(time.RFC3339, r.CreatedAt); r.ID != room || r.Kind != "arena" || r.Members != 1 || r.Reserved != 0 || r.Tick == 0 || err != nil {
		t.Fatalf("GET /admin/rooms lists %+v, want room %s of arena with alice, ticking", r, room)
	}
	if _, body := adminGet(t, admin, "/admin/rooms?kind=lobby"); body != `{"rooms":[]}` {
		t.Fatalf("rooms of kind lobby: %s", body)
	}

	g.leave(alice)
	wiretest.Eventually(t, "the leave counted", func() bool {
		return metric(`shield_room_leaves_total{kind="arena",reason="left"}`) == 1 &&
			metric(`shield_room_state_frames_total{frame="end",kind="arena"}`) == 1 &&
			metric(`shield_room_members{kind="arena"}`) == 0
	})
	wiretest.Eventually(t, "the room closed idle", func() bool {
		return metric(`shield_rooms_closed_total{kind="arena",reason="idle"}`) == 1 && metric(`shield_rooms{kind="arena"}`) == 0
	})
}

// adminGet sends GET path to the admin address with the test's token.
func adminGet(t *testing.T, admin, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}
