package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
)

// TestAnchorsAndAliases: YAML anchors, aliases and merge keys work as YAML
// defines them, and the lines of merged values are where they are written.
func TestAnchorsAndAliases(t *testing.T) {
	src := routesHead + `        - &login {id: 1001, name: login, binding: login, requires_auth: false}
  - &shard
    name: player
    script: player.lua
    instances: 4
    handler_timeout: &budget 2s
    rpc:
      routes: &player_routes
        - {id: 2001, name: move, binding: move, direction: client_to_server}
  - <<: *shard
    name: room
    script: room.lua
    rpc: {routes: [{<<: *login, id: 3001, name: enter}]}
  - {<<: [{instances: 2, mailbox: 8}, *shard], name: lobby, handler_timeout: *budget, rpc: {}}
`
	cfg := parseOK(t, src)
	byName := map[string]config.Actor{}
	for _, a := range cfg.Actors {
		byName[a.Name] = a
	}
	room, lobby := byName["room"], byName["lobby"]
	if room.Instances != 4 || room.HandlerTimeout != 2*time.Second || room.Script != "room.lua" {
		t.Errorf("room = %+v, want instances 4 and 2s merged from player, its own script", room)
	}
	if len(room.Routes) != 1 {
		t.Fatalf("room routes = %+v", room.Routes)
	}
	r := room.Routes[0]
	if r.ID != 3001 || r.Name != "enter" || r.Binding != "login" || r.RequiresAuth || r.OwnerService != "room" {
		t.Errorf("room route = %+v, want id 3001, name enter, the rest of login's keys, owned by room", r)
	}
	if lobby.Instances != 2 || lobby.Mailbox != 8 || lobby.HandlerTimeout != 2*time.Second || len(lobby.Routes) != 0 {
		t.Errorf("lobby = %+v, want instances 2 and mailbox 8 from the first merged mapping, no routes", lobby)
	}
	if got := byName["player"].Routes[0]; got.Line != 17 || got.Direction != config.C2S {
		t.Errorf("player route = %+v, want line 17, c2s", got)
	}
}

// TestAliasBomb: a small file that aliases its way to billions of values is
// stopped with one error, quickly, and leaves nothing for layer 2 to merge.
func TestAliasBomb(t *testing.T) {
	// 2,000 actors, each an alias of one with 2,000 aliased routes.
	var product strings.Builder
	product.WriteString(listenersHead + "actors:\n  - &a {name: auth, script: a.lua, rpc: {routes: [&r {id: 1, binding: b}")
	for range 2000 {
		product.WriteString(", *r")
	}
	product.WriteString("]}}\n")
	for range 2000 {
		product.WriteString("  - *a\n")
	}
	// Merge keys that double at each of 40 levels: the anchors sit under
	// unknown keys (reported, but parsed), and node merges the last one.
	var doubling strings.Builder
	doubling.WriteString(valid + "m0: &m0 {name: gw}\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&doubling, "m%d: &m%d {<<: [*m%d, *m%d]}\n", i, i, i-1, i-1)
	}
	doubling.WriteString("node: {<<: *m39}\n")
	for _, tc := range []struct{ name, src string }{
		{"product", product.String()},
		{"doubling", doubling.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			cfg, errs := config.Parse(file, []byte(tc.src))
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Parse took %v", d)
			}
			var halted int
			for _, e := range errs {
				if strings.Contains(e.Msg, "values through aliases; decoding stopped") {
					halted++
				}
			}
			if halted != 1 {
				t.Fatalf("%d budget errors among %d, want 1:\n%.2000s", halted, len(errs), errs.Error())
			}
			if len(cfg.Actors) != 0 || len(cfg.Network.Listeners) != 0 {
				t.Errorf("%d actors and %d listeners kept after the walk stopped", len(cfg.Actors), len(cfg.Network.Listeners))
			}
		})
	}
}
