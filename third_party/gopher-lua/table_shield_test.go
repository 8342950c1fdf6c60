package lua

// Tests of the Shield patches to the table (PATCHES.md, patches 1 to 4):
// a model-based check of every operation against a Go map, traversals that
// delete as they go, and the bounds that the patches exist for.

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// checkTable fails t unless tb holds exactly model and keeps the patch's
// invariants: #t is a border, the array part ends with a non-nil slot, no
// key is in both parts, the key list and its index agree, hashInts counts
// the listed positive integers, and Next and ForEach see every key once.
func checkTable(t *testing.T, tb *LTable, model map[LValue]LValue, step string) {
	t.Helper()
	for k, v := range model {
		if got := tb.RawGet(k); got != v {
			t.Fatalf("%s: t[%v] = %v, want %v", step, k, got, v)
		}
		if n, ok := k.(LNumber); ok && isPositiveInt(n) {
			if got := tb.RawGetInt(int(n)); got != v {
				t.Fatalf("%s: RawGetInt(%v) = %v, want %v", step, n, got, v)
			}
		}
	}
	n := tb.Len()
	if n == 0 && tb.RawGetInt(1) != LNil || n > 0 && (tb.RawGetInt(n) == LNil || tb.RawGetInt(n+1) != LNil) {
		t.Fatalf("%s: #t = %d is not a border", step, n)
	}
	used := 0
	for _, v := range tb.array {
		if v != LNil {
			used++
		}
	}
	if used != tb.arrayUsed {
		t.Fatalf("%s: arrayUsed %d, %d slots used", step, tb.arrayUsed, used)
	}
	if la := len(tb.array); la > 0 && tb.array[la-1] == LNil {
		t.Fatalf("%s: the array part (%d) ends with nil", step, la)
	}
	for i := len(tb.array); i < cap(tb.array); i++ {
		if v := tb.array[:cap(tb.array)][i]; v != nil && v != LNil {
			t.Fatalf("%s: slot %d past the array part holds %v", step, i+1, v)
		}
	}
	for k := range tb.dict {
		if n, ok := k.(LNumber); ok && isInteger(n) && n >= 1 && int(n) <= len(tb.array)+1 && int(n) < MaxArrayIndex {
			t.Fatalf("%s: key %v is in the hash part, the array part has %d", step, n, len(tb.array))
		}
	}
	ints := 0
	for i, k := range tb.keys {
		if k == deadKey {
			continue
		}
		if j, ok := tb.k2i[k]; !ok || j != i {
			t.Fatalf("%s: keys[%d] = %v, k2i says %d %v", step, i, k, j, ok)
		}
		if isPositiveInt(k) {
			ints++
		}
		if n, ok := k.(LNumber); ok && isArrayKey(n) && int(n) <= len(tb.array) {
			t.Fatalf("%s: key %v listed in the hash part, the array part has %d", step, n, len(tb.array))
		}
	}
	if len(tb.k2i) != len(tb.keys)-countDead(tb.keys) || ints != tb.hashInts {
		t.Fatalf("%s: %d keys (%d dead), %d in k2i, hashInts %d want %d", step, len(tb.keys), countDead(tb.keys), len(tb.k2i), tb.hashInts, ints)
	}
	if tb.strdict != nil && tb.strs != nil || len(tb.strs) > smallStrKeys {
		t.Fatalf("%s: small part of %d with strdict %v", step, len(tb.strs), tb.strdict != nil)
	}
	small := map[string]bool{}
	for _, e := range tb.strs {
		if small[e.key] {
			t.Fatalf("%s: %q twice in the small part", step, e.key)
		}
		small[e.key] = true
		if e.lkey != nil && e.lkey != LString(e.key) {
			t.Fatalf("%s: %q boxed as %v", step, e.key, e.lkey)
		}
	}
	seen := map[LValue]bool{}
	for k, v := tb.Next(LNil); k != LNil; k, v = tb.Next(k) {
		if seen[k] || model[k] != v {
			t.Fatalf("%s: next gave %v = %v (seen before: %v, want %v)", step, k, v, seen[k], model[k])
		}
		seen[k] = true
	}
	if len(seen) != len(model) {
		t.Fatalf("%s: next saw %d keys of %d", step, len(seen), len(model))
	}
	count := 0
	tb.ForEach(func(k, v LValue) {
		count++
		if model[k] != v {
			t.Fatalf("%s: ForEach gave %v = %v, want %v", step, k, v, model[k])
		}
	})
	if count != len(model) {
		t.Fatalf("%s: ForEach saw %d keys of %d", step, count, len(model))
	}
}

func countDead(keys []LValue) int {
	n := 0
	for _, k := range keys {
		if k == deadKey {
			n++
		}
	}
	return n
}

// modelShift moves model's keys from..to up (by > 0) or down one, as
// table.insert and table.remove do.
func modelShift(model map[LValue]LValue, from, to, by int) {
	if by > 0 {
		for k := to; k >= from; k-- {
			modelSet(model, LNumber(k+1), model[LNumber(k)])
		}
	} else {
		for k := from; k <= to; k++ {
			modelSet(model, LNumber(k), model[LNumber(k+1)])
		}
	}
}

func modelSet(model map[LValue]LValue, k, v LValue) {
	if v == nil || v == LNil {
		delete(model, k)
	} else {
		model[k] = v
	}
}

// TestShieldTableModel runs random writes, inserts, removes and appends on
// tables and checks each step against a map.
func TestShieldTableModel(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tb := newLTable(rng.Intn(3)*8, 0)
		model := map[LValue]LValue{}
		for step := 0; step < 600; step++ {
			n := tb.Len()
			var key int
			switch r := rng.Intn(10); {
			case r < 3:
				key = n + 1 - rng.Intn(3)
			case r < 6:
				key = 1 + rng.Intn(80)
			case r < 7:
				key = n + 2 + rng.Intn(40)
			case r < 8:
				key = -rng.Intn(3)
			default:
				key = 1 + rng.Intn(1<<30)
			}
			var val LValue = LNumber(step)
			if rng.Intn(4) == 0 {
				val = LNil
			}
			var desc string
			switch op := rng.Intn(12); {
			case op < 6:
				desc = "RawSetInt"
				tb.RawSetInt(key, val)
				modelSet(model, LNumber(key), val)
			case op < 7:
				desc = "RawSet float"
				f := LNumber(float64(key) + 0.5)
				tb.RawSet(f, val)
				modelSet(model, f, val)
			case op < 8:
				desc = "RawSetString"
				s := string(rune('a' + rng.Intn(26)))
				tb.RawSetString(s, val)
				modelSet(model, LString(s), val)
			case op < 9:
				desc = "Insert"
				if key >= 1 && key <= n {
					modelShift(model, key, n, 1)
				}
				tb.Insert(key, val)
				modelSet(model, LNumber(key), val)
			case op < 10:
				desc = "Remove"
				pos := key
				if pos < 1 {
					pos = n
				}
				want := LValue(LNil)
				if n > 0 && pos <= n {
					if v, ok := model[LNumber(pos)]; ok {
						want = v
					}
					modelShift(model, pos, n-1, -1)
					delete(model, LNumber(n))
				}
				if got := tb.Remove(key); got != want {
					t.Fatalf("seed %d step %d: Remove(%d) = %v, want %v", seed, step, key, got, want)
				}
			case op < 11:
				desc = "Append"
				tb.Append(val)
				if val != LNil {
					modelSet(model, LNumber(n+1), val)
				}
			default:
				desc = "RawSetH"
				tb.RawSetH(LNumber(key), val)
				modelSet(model, LNumber(key), val)
			}
			checkTable(t, tb, model, "seed "+itoa(seed)+" step "+itoa(int64(step))+" "+desc+"("+itoa(int64(key))+")")
		}
	}
}

// TestShieldSmallStrings runs random string-key writes and deletes on
// tables that start with each small-part capacity, so that keys come and
// go in the small part, reuse its tombstones and spill to the map, and
// checks each step against a map (patch 4).
func TestShieldSmallStrings(t *testing.T) {
	for seed := int64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tb := newLTable(rng.Intn(2), []int{0, 1, 4, smallStrKeys, defaultHashCap}[rng.Intn(5)])
		model := map[LValue]LValue{}
		names := 4 + rng.Intn(12) // some seeds never pass smallStrKeys keys at once
		for step := 0; step < 400; step++ {
			key := "k" + itoa(int64(rng.Intn(names)))
			var val LValue = LNumber(step)
			if rng.Intn(3) == 0 {
				val = LNil
			}
			switch rng.Intn(4) {
			case 0:
				tb.RawSet(LString(key), val)
			case 1:
				tb.RawSetH(LString(key), val)
			default:
				tb.RawSetString(key, val)
			}
			modelSet(model, LString(key), val)
			if rng.Intn(5) == 0 { // other keys beside: an array part, a float
				k := LNumber(1 + rng.Intn(3))
				if rng.Intn(2) == 0 {
					k += 0.5
				}
				tb.RawSet(k, LTrue)
				model[k] = LTrue
			}
			if got := tb.RawGetString(key); got != model[LString(key)] && !(got == LNil && model[LString(key)] == nil) {
				t.Fatalf("seed %d step %d: %s = %v, want %v", seed, step, key, got, model[LString(key)])
			}
			checkTable(t, tb, model, "seed "+itoa(seed)+" step "+itoa(int64(step))+" "+key)
		}
	}
}

// TestShieldSmallTraversal clears and assigns string keys while next walks
// a table whose string keys are in the small part: every key is seen once.
func TestShieldSmallTraversal(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tb := newLTable(0, 0)
		model := map[LValue]LValue{}
		for i := 0; i < 1+rng.Intn(smallStrKeys); i++ {
			k := LString("s" + itoa(int64(i)))
			tb.RawSet(k, LTrue)
			model[k] = LTrue
		}
		for i := 1; i <= rng.Intn(5); i++ {
			tb.RawSetInt(i, LTrue)
			model[LNumber(i)] = LTrue
		}
		tb.RawSet(LNumber(0.5), LTrue)
		model[LNumber(0.5)] = LTrue
		if tb.strdict != nil {
			t.Fatalf("seed %d: spilled with %d string keys", seed, len(model))
		}
		seen := map[LValue]bool{}
		for k, _ := tb.Next(LNil); k != LNil; k, _ = tb.Next(k) {
			if seen[k] {
				t.Fatalf("seed %d: %v seen twice", seed, k)
			}
			seen[k] = true
			switch rng.Intn(3) {
			case 0:
				tb.RawSet(k, LNil)
			case 1:
				tb.RawSet(k, LFalse)
			}
		}
		if len(seen) != len(model) {
			t.Fatalf("seed %d: saw %d keys of %d", seed, len(seen), len(model))
		}
		if k, _ := tb.Next(LString("absent")); k != LNil {
			t.Fatalf("seed %d: next from an unknown key gave %v", seed, k)
		}
	}
}

// TestShieldSmallAllocs: a table of a few string fields costs the table and
// its slice, and reading or re-setting a field allocates nothing.
func TestShieldSmallAllocs(t *testing.T) {
	v := LValue(LNumber(1))
	if n := testing.AllocsPerRun(100, func() {
		tb := newLTable(0, 4)
		tb.RawSetString("a", v)
		tb.RawSetString("b", v)
		tb.RawSetString("c", v)
		tb.RawSetString("d", v)
	}); n > 2 {
		t.Errorf("a 4-field table: %v allocations, want 2", n)
	}
	tb := newLTable(0, 0)
	for _, k := range []string{"service", "instance", "deadline"} {
		tb.RawSetString(k, v)
	}
	big := newLTable(0, 0)
	for i := 0; i < 3*smallStrKeys; i++ {
		big.RawSetString("k"+itoa(int64(i)), v)
	}
	boxed := []LValue{LString("x"), LString("y"), LString("name")}
	walked := newLTable(0, 3)
	for _, k := range boxed {
		walked.RawSetH(k, v)
	}
	if n := testing.AllocsPerRun(100, func() {
		for k, _ := walked.Next(LNil); k != LNil; k, _ = walked.Next(k) {
		}
	}); n != 0 {
		t.Errorf("walking a table whose keys were set boxed: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		tb.RawSetString("deadline", v)
		_ = tb.RawGetString("service")
		big.RawSetString("k3", v)
		_ = big.RawGetString("k20")
	}); n != 0 {
		t.Errorf("setting and reading existing fields: %v allocations", n)
	}
}

func itoa(n int64) string {
	return LNumber(n).String()
}

// TestShieldTableTraversalDeletes clears every key while next walks the
// table, as Lua allows, and assigns to keys already there: every key is
// seen exactly once, including after the array part shrinks under it.
func TestShieldTableTraversalDeletes(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tb := newLTable(0, 0)
		model := map[LValue]LValue{}
		for i := 0; i < 200; i++ {
			var k LValue
			switch rng.Intn(4) {
			case 0:
				k = LNumber(1 + rng.Intn(100))
			case 1:
				k = LNumber(1 + rng.Intn(1<<40))
			case 2:
				k = LString(strings.Repeat("k", 1+rng.Intn(30)))
			default:
				k = LNumber(-rng.Intn(50))
			}
			tb.RawSet(k, LTrue)
			model[k] = LTrue
		}
		for i := 1; i <= 40; i++ { // a dense run too
			tb.RawSetInt(i, LTrue)
			model[LNumber(i)] = LTrue
		}
		seen := map[LValue]bool{}
		for k, _ := tb.Next(LNil); k != LNil; k, _ = tb.Next(k) {
			if seen[k] {
				t.Fatalf("seed %d: %v seen twice", seed, k)
			}
			seen[k] = true
			switch rng.Intn(3) {
			case 0:
				tb.RawSet(k, LNil) // clear the current key
			case 1:
				tb.RawSet(k, LFalse) // assign to it
			}
		}
		if len(seen) != len(model) {
			t.Fatalf("seed %d: saw %d keys of %d", seed, len(seen), len(model))
		}
	}
}

// TestShieldTableSparseKeys checks where the keys of the issue go: none of
// them grows the array part.
func TestShieldTableSparseKeys(t *testing.T) {
	tb := newLTable(0, 0)
	for _, k := range []int{1 << 40, 1e15, 1 << 24, MaxArrayIndex - 1, 1000, 33} {
		tb.RawSetInt(k, LTrue)
		tb.RawSet(LNumber(float64(k)), LNumber(k)) // the same key, as a float
	}
	if cap(tb.array) != 0 || tb.Len() != 0 {
		t.Fatalf("sparse keys built an array part of %d (len %d)", cap(tb.array), tb.Len())
	}
	tb.Insert(1<<24, LFalse)
	if cap(tb.array) != 0 || tb.RawGetInt(1<<24) != LFalse {
		t.Fatalf("Insert past the border: array part %d, t[2^24] = %v", cap(tb.array), tb.RawGetInt(1<<24))
	}
	for _, k := range []LValue{LNumber(-1), LNumber(0), LNumber(1.5), LNumber(math.Inf(1)), LNumber(-1e300)} {
		tb.RawSet(k, LTrue)
		if tb.RawGet(k) != LTrue {
			t.Fatalf("t[%v] not found", k)
		}
	}
	tb.RawSet(LNumber(math.Copysign(0, -1)), LFalse) // -0 is 0
	if tb.RawGet(LNumber(0)) != LFalse || cap(tb.array) != 0 {
		t.Fatalf("t[-0]: %v, array part %d", tb.RawGet(LNumber(0)), cap(tb.array))
	}
	listed := len(tb.keys)
	tb.RawSetH(LNumber(math.NaN()), LTrue) // never stored
	if len(tb.keys) != listed {
		t.Fatalf("a NaN key was listed")
	}

	// An array with a gap smaller than what it holds stays an array.
	tb = newLTable(0, 0)
	for k := 1; k <= 30; k++ {
		tb.RawSetInt(k, LTrue)
	}
	for k := 35; k <= 60; k++ {
		tb.RawSetInt(k, LTrue)
	}
	if tb.Len() != 60 || tb.dict != nil {
		t.Fatalf("1..30 and 35..60: #t = %d, %d hash keys", tb.Len(), len(tb.dict))
	}
	tb.RawSetInt(200, LTrue) // more than twice what it holds
	if tb.Len() != 60 || cap(tb.array) >= 200 {
		t.Fatalf("t[200]: #t = %d, array part %d", tb.Len(), cap(tb.array))
	}

	// A table filled from the end becomes an array once t[1] arrives.
	tb = newLTable(0, 0)
	for k := 500; k >= 1; k-- {
		tb.RawSetInt(k, LNumber(k))
	}
	if len(tb.array) != 500 || tb.dict != nil || tb.hashInts != 0 {
		t.Fatalf("reverse fill: array part %d, %d hash keys", len(tb.array), len(tb.dict))
	}
}

// TestShieldTableKeyChurn checks that keys that come and go do not grow the
// key list without bound (patch 3).
func TestShieldTableKeyChurn(t *testing.T) {
	tb := newLTable(0, 0)
	for i := 0; i < 100000; i++ {
		tb.RawSetInt(1<<30+i, LTrue)
		tb.RawSetString("s"+itoa(int64(i)), LTrue)
		if i >= 10 {
			tb.RawSetInt(1<<30+i-10, LNil)
			tb.RawSetString("s"+itoa(int64(i-10)), LNil)
		}
	}
	if len(tb.keys) > 200 || len(tb.k2i) > 200 {
		t.Fatalf("20 live keys, %d listed", len(tb.keys))
	}
}

// TestShieldUnpackBounded checks that unpack refuses a count the registry
// cannot hold at once, and serves one it can in one step.
func TestShieldUnpackBounded(t *testing.T) {
	L := NewState(Options{RegistrySize: 1024, RegistryMaxSize: 1 << 18, RegistryGrowStep: 256})
	defer L.Close()
	start := time.Now()
	err := L.DoString(`local t = {1, 2, 3}
		local ok, e = pcall(unpack, t, 1, 2^24)
		assert(not ok and e:find("too many results to unpack"), e)
		ok, e = pcall(unpack, t, -2^40, 2^40)
		assert(not ok and e:find("too many results to unpack"), e)
		assert(select("#", unpack(t, 1, 200000)) == 200000)
		assert(select("#", unpack(t, 5, 4)) == 0)
		local a, b, c, d = unpack(t, 0, 3)
		assert(a == nil and b == 1 and d == 3)`)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v", took)
	}
	// A registry that may not grow holds what it has.
	L2 := NewState(Options{RegistrySize: 1024})
	defer L2.Close()
	if err := L2.DoString(`assert(not pcall(unpack, {}, 1, 2000))`); err != nil {
		t.Fatal(err)
	}
}

// TestShieldTableLua runs the table behaviour a script sees.
func TestShieldTableLua(t *testing.T) {
	L := NewState()
	defer L.Close()
	err := L.DoString(`
		local t = {}
		t[2^40] = 1; t[1e15] = 2; t[-1] = 3; t[0] = 4; t[1.5] = 5; t[2^24] = 6
		assert(#t == 0 and t[2^40] == 1 and t[1e15] == 2 and t[-1] == 3 and t[0] == 4 and t[1.5] == 5)
		assert(table.maxn(t) == 1e15)
		t[1.0] = "a"; t[2] = "b"
		assert(#t == 2 and t[1] == "a")
		local n = 0
		for k, v in pairs(t) do n = n + 1 end
		assert(n == 8, n)
		table.insert(t, 2^24 + 1, "far")
		assert(t[2^24 + 1] == "far" and #t == 2)
		table.insert(t, 1, "first")
		assert(#t == 3 and t[1] == "first" and t[3] == "b")
		assert(table.remove(t, 1) == "first" and #t == 2)
		local u = {1, nil, 3}
		assert(#u == 3 and select("#", unpack(u)) == 3)
		local function pack(...) return {...} end
		local p = pack(nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
			nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, "last")
		assert(#p == 41 and p[41] == "last", tostring(#p))
		local v = {}
		for i = 10, 1, -1 do v[i] = i end
		assert(#v == 10)
		local w = {}
		for i = 1, 100 do w[i] = i end
		for i = 100, 51, -1 do w[i] = nil end
		assert(#w == 50)
		w[100] = 1
		assert(w[100] == 1 and (#w == 50 or #w == 100))
	`)
	if err != nil {
		t.Fatal(err)
	}
}
