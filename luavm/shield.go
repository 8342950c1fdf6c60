package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/luavm/strlib"
)

// check turns the (ok, ...) that a suspending Go function resumes with into
// a return or a raise. The raise has to happen in Lua, after the resume,
// because a Go function cannot raise into a coroutine it has yielded.
var checkChunk = &builtin{name: "check", src: `
local error = error
return function(ok, ...)
  if ok then return ... end
  error((...), 0)
end
`}

// suspendChunk makes a suspending function's Lua half (see suspending).
var suspendChunk = &builtin{name: "suspend", src: `local check, fn = ... return function(...) return check(fn(...)) end`}

// builtinChunk prefixes the names of the runtime's own Lua chunks, whose
// frames tracebacks leave out.
const builtinChunk = "=shield:"

// installShield builds the shield module (SPEC §8) and makes it the global
// `shield` and require("shield").
func (vm *VM) installShield() {
	L := vm.l
	vm.errMeta = L.NewTable()
	vm.errMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(lua.LString(lua.LVAsString(t.RawGetString("code")) + ": " + lua.LVAsString(t.RawGetString("message"))))
		return 1
	}))
	vm.errMeta.RawSetString("__metatable", lua.LFalse)

	sh := L.NewTable()
	vm.shield = sh
	L.SetFuncs(sh, map[string]lua.LGFunction{
		"send":     vm.luaSend,
		"error":    vm.luaError,
		"timeout":  vm.luaTimeout,
		"cancel":   vm.luaCancel,
		"now":      luaNow,
		"self":     vm.luaSelf,
		"array":    luaArray,
		"settings": vm.luaSettings,
	})
	check := vm.mustChunk(checkChunk).(*lua.LFunction)
	sh.RawSetString("call", vm.suspending(check, vm.luaCall))
	sh.RawSetString("sleep", vm.suspending(check, vm.luaSleep))
	sh.RawSetString("null", codec.Null(L))

	logt := L.NewTable()
	for name, level := range map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		logt.RawSetString(name, L.NewFunction(vm.luaLog(level)))
	}
	sh.RawSetString("log", logt)
	sh.RawSetString("json", L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{"encode": vm.luaJSONEncode, "decode": luaJSONDecode}))
	vm.installClient(sh, check)
	vm.installCrypto(sh)
	vm.installHTTP(sh, check)
	vm.installKV(sh, check)
	vm.installRooms(sh, check)
	vm.installMatch(sh, check)

	L.G.Global.RawSetString("shield", sh)
	L.G.Global.RawGetString("package").(*lua.LTable).RawGetString("loaded").(*lua.LTable).RawSetString("shield", sh)
}

// suspending wraps a Go function that may yield: Lua sees
// function(...) return check(fn(...)) end.
func (vm *VM) suspending(check *lua.LFunction, fn lua.LGFunction) *lua.LFunction {
	vm.l.Push(suspendChunk.function(vm.l))
	vm.l.Push(check)
	vm.l.Push(vm.l.NewFunction(fn))
	vm.l.Call(2, 1)
	f := vm.l.Get(-1).(*lua.LFunction)
	vm.l.Pop(1)
	return f
}

// mustChunk runs a built-in chunk and returns its first result.
func (vm *VM) mustChunk(b *builtin) lua.LValue {
	vm.l.Push(b.function(vm.l))
	vm.l.Call(0, 1)
	v := vm.l.Get(-1)
	vm.l.Pop(1)
	return v
}

// boundConcat caps the `..` operator at lua.max_string_bytes, as the
// string library is (gopher-lua patch 12): a doubling loop otherwise builds
// gigabytes in a few instructions, each one Go call the handler's budget
// cannot interrupt. It runs before any thread is made: threads copy the
// options.
func (vm *VM) boundConcat() {
	limit := int(min(vm.spec.MaxStringBytes, int64(^uint(0)>>1)))
	vm.l.Options.MaxConcatBytes = limit
	vm.l.Options.OnConcatLimit = func(L *lua.LState, n int) {
		L.Error(vm.errorValue(codes.ResourceExhausted,
			fmt.Sprintf("'..': result of %d bytes exceeds max_string_bytes (%d)", n, limit)), 0)
	}
}

func (vm *VM) installStrings() {
	limit := int(min(vm.spec.MaxStringBytes, int64(^uint(0)>>1)))
	// Encoded JSON is a string the VM builds too: the same cap applies.
	codec.SetMaxEncodeBytes(vm.l, limit)
	strlib.Open(vm.l, strlib.Limits{
		MaxStringBytes: limit,
		OnExceeded: func(L *lua.LState, what string) {
			L.Error(vm.errorValue(codes.ResourceExhausted, what), 0)
		},
	})
}

// errorValue is a shield error: a table {code=, message=} with a
// __tostring, marked by its metatable as raised by Shield itself, so that a
// script's own error({code = ...}) cannot pass as one.
func (vm *VM) errorValue(code codes.Code, msg string) *lua.LTable {
	t := vm.l.CreateTable(0, 2)
	t.RawSetString("code", lua.LString(code))
	t.RawSetString("message", lua.LString(msg))
	t.Metatable = vm.errMeta
	return t
}

// raise raises a shield error from a Go function.
func (vm *VM) raise(L *lua.LState, code codes.Code, format string, args ...any) {
	L.Error(vm.errorValue(code, fmt.Sprintf(format, args...)), 0)
}

// shield.error(code, message): a business error with a checked code; any
// other code is a plain error, so the client sees handler_failed.
func (vm *VM) luaError(L *lua.LState) int {
	code := L.CheckString(1)
	msg := L.OptString(2, "")
	if !codes.ValidBusiness(code) {
		L.RaiseError("shield.error: %q is not a business code (lowercase dotted, such as \"shop.sold_out\", outside client_rpc., session. and gateway.)", code)
	}
	L.Error(vm.errorValue(codes.Code(code), msg), 0)
	return 0
}

func luaNow(L *lua.LState) int {
	L.Push(lua.LNumber(time.Now().UnixMilli()))
	return 1
}

func (vm *VM) luaSelf(L *lua.LState) int {
	L.Push(lua.LString(vm.service))
	if vm.room != nil {
		L.Push(lua.LNumber(-1))
		L.Push(lua.LString(vm.room.id))
		return 3
	}
	L.Push(lua.LNumber(vm.instance))
	return 2
}

func luaArray(L *lua.LState) int {
	t := L.OptTable(1, nil)
	if t == nil {
		t = L.NewTable()
	}
	if err := codec.MarkArray(L, t); err != nil {
		L.RaiseError("shield.array: %v", err)
	}
	L.Push(t)
	return 1
}

func (vm *VM) luaJSONEncode(L *lua.LState) int {
	b, err := codec.AppendJSON(nil, L, L.CheckAny(1))
	if errors.Is(err, codec.ErrTooLarge) {
		vm.raise(L, codes.ResourceExhausted, "shield.json.encode: %v", err)
	}
	if err != nil {
		L.RaiseError("%v", err)
	}
	L.Push(lua.LString(b))
	return 1
}

func luaJSONDecode(L *lua.LState) int {
	v, err := codec.DecodeJSON(L, []byte(L.CheckString(1)))
	if err != nil {
		L.RaiseError("shield.json.decode: %v", err)
	}
	L.Push(v)
	return 1
}

// luaLog logs msg with key/value pairs (SPEC §9). A line logged while
// handling a client's frame carries that session's session_id and
// player_id, once each: a key the script passes that a line already has
// (session_id, player_id, service, instance, and slog's own time, level
// and msg) is renamed arg.<key>. A table is logged as a nested JSON value,
// so a log line never holds a Lua address.
func (vm *VM) luaLog(level slog.Level) lua.LGFunction {
	return func(L *lua.LState) int {
		msg := L.CheckString(1)
		top := L.GetTop()
		attrs := make([]slog.Attr, 0, top/2+2)
		if ref := vm.current.session(); ref != nil {
			attrs = append(attrs, slog.Uint64("session_id", ref.SessionID), slog.Any("player_id", playerAttr(ref.PlayerID)))
		}
		if tid, sid, ok := vm.traceLog(); ok {
			attrs = append(attrs, slog.String("trace_id", tid), slog.String("span_id", sid))
		}
		for i := 2; i+1 <= top; i += 2 {
			key := L.ToStringMeta(L.Get(i)).String()
			if reservedLogKeys[key] {
				key = "arg." + key
			}
			attrs = append(attrs, slog.Any(key, logValue(L, L.Get(i+1))))
		}
		if top >= 2 && top%2 == 0 {
			attrs = append(attrs, slog.Any("!BADKEY", logValue(L, L.Get(top))))
		}
		vm.log.LogAttrs(context.Background(), level, msg, attrs...)
		return 0
	}
}

// reservedLogKeys are the keys a VM's log line may already hold.
var reservedLogKeys = map[string]bool{"session_id": true, "player_id": true, "service": true, "instance": true,
	"trace_id": true, "span_id": true,
	slog.TimeKey: true, slog.LevelKey: true, slog.MessageKey: true, slog.SourceKey: true}

func logValue(L *lua.LState, v lua.LValue) any {
	switch v := v.(type) {
	case lua.LNumber:
		if f := float64(v); f == float64(int64(f)) {
			return int64(f)
		}
		return float64(v)
	case lua.LBool:
		return bool(v)
	case lua.LString:
		return string(v)
	case *lua.LTable:
		if b, err := codec.AppendJSON(nil, L, v); err == nil {
			return json.RawMessage(b)
		}
	case *lua.LUserData:
		if _, ok := v.Value.(codec.Tabler); ok { // a client: as the table of its fields
			if b, err := codec.AppendJSON(nil, L, v); err == nil {
				return json.RawMessage(b)
			}
		}
	}
	if codec.IsNull(L, v) {
		return nil
	}
	return L.ToStringMeta(v).String()
}
