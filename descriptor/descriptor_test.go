package descriptor_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/internal/testutil"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	os.Exit(testutil.CheckGoroutinesMain(m, "descriptor"))
}

const file = "game.yaml"

// head is a listener and the opening of the actors list; snippets add
// actors from line 5 on.
const head = `network:
  listeners:
    - {name: game, address: ":7000", entry_service: auth}
actors:
`

// merge parses src, which must pass layer 1, and merges it.
func merge(t testing.TB, src string) (*descriptor.Table, config.Errors) {
	t.Helper()
	cfg, errs := config.Parse(file, []byte(src))
	if len(errs) > 0 {
		t.Fatalf("layer 1 errors:\n%v", errs)
	}
	return descriptor.Merge(cfg)
}

// mergeOK merges src and fails on any error.
func mergeOK(t testing.TB, src string) *descriptor.Table {
	t.Helper()
	table, errs := merge(t, src)
	if len(errs) > 0 {
		t.Fatalf("layer 2 errors:\n%v", errs)
	}
	return table
}

// expectOne checks that errs is one error whose message has every piece.
func expectOne(t testing.TB, errs config.Errors, pieces ...string) {
	t.Helper()
	if len(errs) != 1 {
		t.Fatalf("got %d errors, want 1:\n%v", len(errs), errs)
	}
	msg := errs[0].Error()
	for _, p := range pieces {
		if !strings.Contains(msg, p) {
			t.Errorf("error %q\nwant it to contain %q", msg, p)
		}
	}
}

func TestConflictID(t *testing.T) {
	_, errs := merge(t, head+`  - name: auth
    script: auth.lua
    rpc: {routes: [{id: 1001, name: login, binding: login}]}
  - name: lobby
    script: lobby.lua
    rpc: {routes: [{id: 1001, name: enter, binding: enter}]}
`)
	expectOne(t, errs, file+":10:", `actor "lobby": route 1001 (enter): `,
		"rpc route conflict: id 1001", `actor "auth" (line 7)`, `actor "lobby" (line 10)`)
}

func TestConflictName(t *testing.T) {
	_, errs := merge(t, head+`  - name: auth
    script: auth.lua
    rpc: {routes: [{id: 1001, name: login, binding: login}]}
  - name: lobby
    script: lobby.lua
    rpc: {routes: [{id: 1002, name: login, binding: login}]}
`)
	expectOne(t, errs, file+":10:", `actor "lobby": route 1002 (login): `,
		"rpc route conflict: name login", `actor "auth" (line 7)`, `actor "lobby" (line 10)`)
}

// TestConflictEveryOne: a route that clashes with two others reports both,
// and every conflict of the file is reported in one run.
func TestConflictEveryOne(t *testing.T) {
	table, errs := merge(t, head+`  - name: auth
    script: auth.lua
    rpc: {routes: [{id: 1, name: a, binding: a}, {id: 2, name: b, binding: b}]}
  - name: lobby
    script: lobby.lua
    rpc: {routes: [{id: 1, name: b, binding: x}, {id: 3, name: a, binding: y}]}
`)
	if len(errs) != 3 {
		t.Fatalf("got %d errors, want 3:\n%v", len(errs), errs)
	}
	for i, want := range []string{"rpc route conflict: id 1", "rpc route conflict: name b", "rpc route conflict: name a"} {
		if !strings.Contains(errs[i].Error(), want) {
			t.Errorf("error %d = %q, want %q", i, errs[i], want)
		}
	}
	// The first declaration of each id and name stays in the table.
	if ids := routeIDs(table); !slices.Equal(ids, []uint32{1, 2}) {
		t.Errorf("table ids = %v, want [1 2]", ids)
	}
}

func TestUnknownOwner(t *testing.T) {
	_, errs := merge(t, head+`  - name: auth
    script: auth.lua
    rpc: {routes: [{id: 1001, name: login, binding: login, owner_service: authz}]}
`)
	expectOne(t, errs, file+":7:", `actor "auth": route 1001 (login): owner_service "authz" is not an actor`)
}

// TestTypelenIDs: with a typelen listener every id must fit 16 bits; the
// same id is fine when no listener speaks typelen.
func TestTypelenIDs(t *testing.T) {
	actors := `  - name: auth
    script: auth.lua
    rpc: {routes: [{id: 65535, name: max, binding: a}, {id: 65536, name: wide, binding: b}, {id: 70000, binding: c}]}
`
	typelen := "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth}\n    - {name: mobile, address: \":7001\", entry_service: auth, protocol: {envelope: typelen}}\nactors:\n"
	_, errs := merge(t, typelen+actors)
	if len(errs) != 2 {
		t.Fatalf("got %d errors, want 2:\n%v", len(errs), errs)
	}
	for i, id := range []string{"route 65536 (wide)", "route 70000"} {
		want := fmt.Sprintf(`%s:8: actor "auth": %s: id %s does not fit the 16-bit route_id of envelope typelen (listener "mobile"); use ids up to 65535`,
			file, id, strings.Fields(id)[1])
		if got := errs[i].Error(); got != want {
			t.Errorf("error %d:\n got %s\nwant %s", i, got, want)
		}
	}
	table := mergeOK(t, head+actors)
	if ids := routeIDs(table); !slices.Equal(ids, []uint32{65535, 65536, 70000}) {
		t.Errorf("idlen table ids = %v", ids)
	}
}

// TestDuplicateHelper: two s2c or bidi routes of one owner with one binding
// would both be shield.client_rpc.<binding>.
func TestDuplicateHelper(t *testing.T) {
	_, errs := merge(t, head+`  - name: auth
    script: auth.lua
    rpc:
      routes:
        - {id: 2001, name: position, binding: push, direction: s2c}
        - {id: 2002, name: chat, binding: push, direction: bidi}
        - {id: 2003, name: login, binding: push}
`)
	expectOne(t, errs, file+":10:", `actor "auth": route 2002 (chat): `,
		`push helper conflict: shield.client_rpc.push of service "auth" is also route 2001 (position) (line 9)`)

	// A push route rejected for its id is not reported again for its
	// helper.
	_, errs = merge(t, head+`  - name: auth
    script: auth.lua
    rpc: {routes: [{id: 2001, binding: push, direction: s2c}]}
  - name: room
    script: room.lua
    rpc: {routes: [{id: 2001, binding: push, direction: s2c, owner_service: auth}]}
`)
	expectOne(t, errs, file+":10:", "rpc route conflict: id 2001")

	// One binding pushed by two different owners is two helpers.
	mergeOK(t, head+`  - name: auth
    script: auth.lua
    rpc: {routes: [{id: 2001, binding: push, direction: s2c}, {id: 2002, binding: push, direction: s2c, owner_service: room}]}
  - {name: room, script: room.lua}
`)
}

// TestOwned: owner_service moves a route to another service, whose VMs
// are the only ones to compile it.
func TestOwned(t *testing.T) {
	table := mergeOK(t, head+`  - name: player
    script: player.lua
    rpc:
      routes:
        - {id: 2101, name: position, binding: position, direction: s2c, owner_service: room}
        - {id: 2001, name: move, binding: move}
  - name: room
    script: room.lua
    rpc: {routes: [{id: 3001, name: enter, binding: enter}]}
  - {name: auth, script: auth.lua}
`)
	for svc, want := range map[string][]uint32{"player": {2001}, "room": {2101, 3001}, "auth": nil} {
		if got := idsOf(table.Owned(svc)); !slices.Equal(got, want) {
			t.Errorf("Owned(%s) = %v, want %v", svc, got, want)
		}
	}
	r, ok := table.Route(2101)
	if !ok || r.Owner != "room" || r.Declarer != "player" || r.Direction != config.S2C {
		t.Errorf("route 2101 = %+v, %v; want owner room, declared by player", r, ok)
	}
}

// TestTableSorted: the table is sorted by id whatever the order of
// declaration, and each route's fields come from its declaration.
func TestTableSorted(t *testing.T) {
	ids := rand.Perm(300)
	var b strings.Builder
	b.WriteString(head + "  - name: auth\n    script: auth.lua\n    rpc:\n      routes:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "        - {id: %d, name: r%d, binding: f%d, requires_auth: %t}\n", id+1, id+1, id+1, id%2 == 0)
	}
	table := mergeOK(t, b.String())
	if table.Len() != 300 {
		t.Fatalf("Len = %d", table.Len())
	}
	for i, r := range table.Routes() {
		id := uint32(i + 1)
		if r.ID != id || r.Name != fmt.Sprintf("r%d", id) || r.Binding != fmt.Sprintf("f%d", id) || r.RequiresAuth != (i%2 == 0) {
			t.Fatalf("routes[%d] = %+v", i, r)
		}
		if r.File != file || r.Line != 9+slices.Index(ids, i) {
			t.Fatalf("routes[%d] declared at %s:%d", i, r.File, r.Line)
		}
	}
}

func TestLookups(t *testing.T) {
	table := mergeOK(t, head+`  - name: auth
    script: auth.lua
    rpc:
      routes:
        - {id: 1001, name: login, binding: login, requires_auth: false, action: forward_raw, request_codec: raw, request_schema: Login}
        - {id: 7, binding: ping, direction: bidirectional, action: drop}
`)
	r, ok := table.Route(1001)
	want := descriptor.Route{ID: 1001, Name: "login", Binding: "login", Direction: config.C2S, Owner: "auth", Declarer: "auth",
		RequiresAuth: false, Action: config.ForwardRaw, RequestCodec: "raw", RequestSchema: "Login", LazyDecode: true, File: file, Line: 9}
	if !ok || *r != want {
		t.Errorf("Route(1001) = %+v, %v\nwant %+v", r, ok, want)
	}
	if r, ok := table.ByName("login"); !ok || r.ID != 1001 {
		t.Errorf("ByName(login) = %+v, %v", r, ok)
	}
	if _, ok := table.Route(1002); ok {
		t.Error("Route(1002) found")
	}
	if _, ok := table.ByName(""); ok {
		t.Error(`ByName("") found the route without a name`)
	}
	r7, _ := table.Route(7)
	if r7.Label() != "route 7" || r7.MetricName() != "7" || r.Label() != "route 1001 (login)" || r.MetricName() != "login" {
		t.Errorf("labels: %q %q %q %q", r7.Label(), r7.MetricName(), r.Label(), r.MetricName())
	}

	edge := table.Edge()
	if e := edge.Lookup(1001); e == nil || *e != (descriptor.EdgeRoute{ID: 1001, Name: "login", Direction: config.C2S, RequiresAuth: false, Action: config.ForwardRaw, Owner: "auth"}) {
		t.Errorf("Lookup(1001) = %+v", e)
	}
	if e := edge.Lookup(7); e == nil || e.Direction != config.Bidi || e.Action != config.Drop || !e.RequiresAuth {
		t.Errorf("Lookup(7) = %+v", e)
	}
	for _, id := range []uint32{0, 8, 1000, 1<<24 - 1, 1 << 31} {
		if e := edge.Lookup(id); e != nil {
			t.Errorf("Lookup(%d) = %+v, want nil", id, e)
		}
	}
	if e := edge.LookupName("login"); e != edge.Lookup(1001) {
		t.Errorf("LookupName(login) = %p, want the same entry as Lookup(1001)", e)
	}
	for _, name := range []string{"", "Login", "ping"} {
		if e := edge.LookupName(name); e != nil {
			t.Errorf("LookupName(%q) = %+v, want nil", name, e)
		}
	}
}

// edgeFixture is a table of 1,000 routes for the allocation test and the
// benchmark.
func edgeFixture(tb testing.TB) *descriptor.Edge {
	tb.Helper()
	var b strings.Builder
	b.WriteString(head + "  - name: auth\n    script: auth.lua\n    rpc:\n      routes:\n")
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "        - {id: %d, name: r%d, binding: f}\n", i*97, i)
	}
	return mergeOK(tb, b.String()).Edge()
}

// TestEdgeLookupAllocs: a lookup runs once per frame and must not allocate,
// hit or miss, by id or by name.
func TestEdgeLookupAllocs(t *testing.T) {
	edge := edgeFixture(t)
	var sink *descriptor.EdgeRoute
	allocs := testing.AllocsPerRun(1000, func() {
		sink = edge.Lookup(97 * 500)
		sink = edge.Lookup(98)
		sink = edge.LookupName("r500")
		sink = edge.LookupName("nope")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per lookup, want 0", allocs)
	}
	_ = sink
}

func BenchmarkEdgeLookup(b *testing.B) {
	edge := edgeFixture(b)
	b.ReportAllocs()
	var hits int
	i := uint32(0)
	for b.Loop() {
		i++
		if edge.Lookup(i%100000) != nil {
			hits++
		}
	}
	if hits == 0 && b.N > 100000 {
		b.Fatal("no hits")
	}
}

func routeIDs(t *descriptor.Table) []uint32 { return idsOf(t.Routes()) }

func idsOf(rs []descriptor.Route) []uint32 {
	var ids []uint32
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}
