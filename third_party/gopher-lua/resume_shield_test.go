package lua

import (
	"strings"
	"testing"
)

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

// Shield patch 9: ResumePooled starts a function on a new or finished
// coroutine, resumes a suspended one, keeps the coroutine's Panic hook,
// and reports no value when there is none.
func TestShieldResumePooled(t *testing.T) {
	L := NewState()
	defer L.Close()
	if err := L.DoString(`
function add(a, b) return a + b, "sum" end
function none() end
function waits(a) local b = coroutine.yield(a) return b * 2 end
function fails() local t = nil; return t.x end
function keep(co) kept = co end
`); err != nil {
		t.Fatal(err)
	}
	fn := func(name string) *LFunction { return L.GetGlobal(name).(*LFunction) }
	hooked := 0
	th, _ := L.NewThread()
	th.Panic = func(L *LState) {
		hooked++
		panic(&ApiError{Type: ApiErrorRun, Object: L.Get(-1)})
	}

	st, err, vals := L.ResumePooled(nil, th, fn("add"), LNumber(1), LNumber(2))
	if st != ResumeOK || err != nil || len(vals) != 2 || vals[0] != LNumber(3) || vals[1] != LString("sum") {
		t.Fatalf("add on a new coroutine: %v %v %v", st, err, vals)
	}
	if !th.Dead || L.Status(th) != "dead" {
		t.Fatalf("finished: Dead %v, status %q, want dead for Lua", th.Dead, L.Status(th))
	}
	// A script that kept the finished coroutine cannot resume it.
	L.Push(fn("keep"))
	L.Push(th)
	L.Call(1, 0)
	if err := L.DoString(`local ok, msg = coroutine.resume(kept); refused = not ok and msg`); err != nil {
		t.Fatal(err)
	}
	if got := L.GetGlobal("refused"); got == LFalse || got == LNil {
		t.Fatalf("coroutine.resume of a finished pooled coroutine: %v, want refused", got)
	}

	if st, err, vals := L.ResumePooled(nil, th, fn("none")); st != ResumeOK || err != nil || len(vals) != 0 {
		t.Fatalf("none on the finished coroutine: %v %v %v, want no values", st, err, vals)
	}
	if st, err, vals := L.ResumePooled(nil, th, fn("waits"), LNumber(4)); st != ResumeYield || err != nil || len(vals) != 1 || vals[0] != LNumber(4) {
		t.Fatalf("waits: %v %v %v", st, err, vals)
	}
	if st, err, vals := L.ResumePooled(nil, th, nil, LNumber(5)); st != ResumeOK || err != nil || len(vals) != 1 || vals[0] != LNumber(10) {
		t.Fatalf("waits resumed: %v %v %v", st, err, vals)
	}
	if th.reg.Top() != 0 {
		t.Fatalf("a finished coroutine keeps %d registers of its function's", th.reg.Top())
	}
	if st, err, _ := L.ResumePooled(nil, th, fn("fails")); st != ResumeError || err == nil {
		t.Fatalf("fails: %v %v", st, err)
	}
	if hooked != 1 {
		t.Fatalf("the coroutine's own Panic hook ran %d times, want 1 (Resume would have replaced it)", hooked)
	}
	// Refused: one that died of an error (even in its first frame, which
	// leaves no frame but may leave open upvalues) ...
	if st, err, _ := L.ResumePooled(nil, th, fn("add"), LNumber(1), LNumber(2)); st != ResumeError || err == nil {
		t.Fatalf("add after an error: %v %v, want refused", st, err)
	}
	// ... one that is not suspended, when there is no function to start ...
	fresh, _ := L.NewThread()
	if st, err, _ := L.ResumePooled(nil, fresh, nil); st != ResumeError || err == nil {
		t.Fatalf("a new coroutine without a function: %v %v, want refused", st, err)
	}
	// ... and one that Lua code finished.
	if err := L.DoString(`byLua = coroutine.create(function() return 1 end); coroutine.resume(byLua)`); err != nil {
		t.Fatal(err)
	}
	if st, err, _ := L.ResumePooled(nil, L.GetGlobal("byLua").(*LState), fn("add"), LNumber(1), LNumber(2)); st != ResumeError || err == nil {
		t.Fatalf("a coroutine Lua finished: %v %v, want refused", st, err)
	}
	if st, _, vals := L.ResumePooled(nil, fresh, fn("add"), LNumber(2), LNumber(2)); st != ResumeOK || vals[0] != LNumber(4) {
		t.Fatalf("the new coroutine, with a function: %v %v", st, vals)
	}
}

// A coroutine started per message with ResumePooled allocates nothing of
// its own.
func TestShieldResumePooledAllocs(t *testing.T) {
	L := NewState()
	defer L.Close()
	if err := L.DoString(`function echo(v) return v end`); err != nil {
		t.Fatal(err)
	}
	fn := L.GetGlobal("echo").(*LFunction)
	th, _ := L.NewThread()
	buf := make([]LValue, 0, 4)
	v := LValue(LTrue)
	n := testing.AllocsPerRun(100, func() {
		_, _, buf = L.ResumePooled(buf[:0], th, fn, v)
	})
	if n != 0 {
		t.Fatalf("%v allocations per run, want 0", n)
	}
}

// Shield patch 11: a yield inside Lua that a Go function called (a sort
// comparator, a gsub callback, a metamethod, the native pcall) raises
// Lua 5.1's error instead of returning into the Go function's call; a
// coroutine resumed from inside such a call still yields to it; and the
// count of Go calls survives errors that unwind them.
func TestShieldYieldAcrossGoCall(t *testing.T) {
	L := NewState()
	defer L.Close()
	const across = "attempt to yield across metamethod/C-call boundary"
	if err := L.DoString(`
		function sorted() table.sort({3, 1, 2}, function(a, b) coroutine.yield() return a < b end) return "no" end
		function gsubbed() return (string.gsub("ab", ".", function(c) coroutine.yield() return c end)) end
		function indexed() local t = setmetatable({}, {__index = function() coroutine.yield() end}) return t.x end
		function pcalled() local ok, err = pcall(coroutine.yield, 1) return ok, err end
		function inner() -- a coroutine resumed inside a comparator yields to it
			local n = 0
			table.sort({3, 1, 2}, function(a, b)
				local co = coroutine.create(function() coroutine.yield(1) end)
				local _, v = coroutine.resume(co)
				n = n + v
				return a < b
			end)
			return n > 0
		end
		function after() -- after a caught error inside a Go call, a plain yield works
			pcall(table.sort, {2, 1}, function() error("x") end)
			pcall(table.sort, {2, 1}, function() coroutine.yield() end)
			return coroutine.yield("plain")
		end
	`); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...LValue) (ResumeState, error, []LValue) {
		th, _ := L.NewThread()
		return L.Resume(th, L.GetGlobal(name).(*LFunction), args...)
	}
	for _, name := range []string{"sorted", "gsubbed", "indexed"} {
		st, err, _ := run(name)
		if st != ResumeError || err == nil || !strings.Contains(err.Error(), across) {
			t.Fatalf("%s: %v %v, want the error %q", name, st, err, across)
		}
	}
	if st, err, vals := run("pcalled"); st != ResumeOK || err != nil || len(vals) != 2 || vals[0] != LFalse || !strings.Contains(vals[1].String(), across) {
		t.Fatalf("pcalled: %v %v %v", st, err, vals)
	}
	if st, err, vals := run("inner"); st != ResumeOK || err != nil || len(vals) != 1 || vals[0] != LTrue {
		t.Fatalf("inner: %v %v %v", st, err, vals)
	}
	th, _ := L.NewThread()
	fn := L.GetGlobal("after").(*LFunction)
	if st, err, vals := L.Resume(th, fn); st != ResumeYield || err != nil || len(vals) != 1 || vals[0] != LString("plain") {
		t.Fatalf("after: %v %v %v", st, err, vals)
	}
	if th.nCcalls != 0 {
		t.Fatalf("after: %d Go calls counted on a suspended thread", th.nCcalls)
	}
}

// Shield patch 11: an error in xpcall's handler unwinds the handler's Go
// call too, and a pooled coroutine starts each function with no Go call
// counted, so a later yield on the thread still works.
func TestShieldYieldAfterXpcallHandlerError(t *testing.T) {
	L := NewState()
	defer L.Close()
	if err := L.DoString(`function f() xpcall(error, function() error("b") end) return coroutine.yield("ok") end`); err != nil {
		t.Fatal(err)
	}
	th, _ := L.NewThread()
	st, err, vals := L.Resume(th, L.GetGlobal("f").(*LFunction))
	if st != ResumeYield || err != nil || len(vals) != 1 || vals[0] != LString("ok") {
		t.Fatalf("xpcall with a failing handler, then a yield: %v %v %v", st, err, vals)
	}
	if !th.CanYield() {
		t.Fatalf("%d Go calls left counted", th.nCcalls)
	}
}
