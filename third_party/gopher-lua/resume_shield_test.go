package lua

import "testing"

// Shield patch 6: ResumeInto returns the values in the caller's slice.
func TestShieldResumeInto(t *testing.T) {
	L := NewState()
	defer L.Close()
	if err := L.DoString(`function gen(a) local b = coroutine.yield(a + 1, "x"); return b * 2 end`); err != nil {
		t.Fatal(err)
	}
	fn := L.GetGlobal("gen").(*LFunction)
	th, _ := L.NewThread()
	buf := make([]LValue, 0, 4)

	st, err, vals := L.ResumeInto(buf, th, fn, LNumber(1))
	if st != ResumeYield || err != nil || len(vals) != 2 || vals[0] != LNumber(2) || vals[1] != LString("x") {
		t.Fatalf("first resume: %v %v %v", st, err, vals)
	}
	if &vals[0] != &buf[:1][0] {
		t.Fatal("the values are not in the caller's slice")
	}
	st, err, vals = L.ResumeInto(vals, th, fn, LNumber(5))
	if st != ResumeOK || err != nil || len(vals) != 1 || vals[0] != LNumber(10) {
		t.Fatalf("second resume: %v %v %v", st, err, vals)
	}

	// A nil slice behaves as Resume.
	th2, _ := L.NewThread()
	if st, err, vals := L.ResumeInto(nil, th2, fn, LNumber(1)); st != ResumeYield || err != nil || len(vals) != 2 {
		t.Fatalf("nil slice: %v %v %v", st, err, vals)
	}
}

// A coroutine resumed per message with ResumeInto allocates nothing of
// its own for its values.
func TestShieldResumeIntoAllocs(t *testing.T) {
	L := NewState()
	defer L.Close()
	if err := L.DoString(`function loop(v) while true do v = coroutine.yield(v) end end`); err != nil {
		t.Fatal(err)
	}
	fn := L.GetGlobal("loop").(*LFunction)
	th, _ := L.NewThread()
	buf := make([]LValue, 0, 4)
	v := LValue(LTrue)
	if _, err, _ := L.ResumeInto(buf, th, fn, v); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		_, _, buf = L.ResumeInto(buf[:0], th, fn, v)
	})
	if n != 0 {
		t.Fatalf("%v allocations per resume, want 0", n)
	}
}

// Shield patch 8: `return coroutine.yield(...)`, a Go function tail-called
// by a coroutine's first frame, suspends the coroutine and, resumed, returns
// the values it was resumed with; upstream crashed on the second resume.
// A tail call of a Go function that returns (not yields) returns its
// results, as before.
func TestShieldTailCalledYield(t *testing.T) {
	L := NewState()
	defer L.Close()
	if err := L.DoString(`
local co = coroutine.create(function(a) return coroutine.yield(a + 1, "y") end)
local r1 = { coroutine.resume(co, 1) }
local s1 = coroutine.status(co)
local r2 = { coroutine.resume(co, 5, 6) }
local r3 = { coroutine.resume(co) }
local plain = coroutine.create(function(x) return tostring(x) end)
local r4 = { coroutine.resume(plain, 7) }
result = table.concat({ tostring(r1[1]), r1[2], r1[3], s1, tostring(r2[1]), r2[2], r2[3],
  coroutine.status(co), tostring(r3[1]), tostring(r4[1]), r4[2], coroutine.status(plain) }, ",")
`); err != nil {
		t.Fatal(err)
	}
	want := "true,2,y,suspended,true,5,6,dead,false,true,7,dead"
	if got := L.GetGlobal("result").String(); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
