package luavm

import (
	"encoding/json"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/match"
)

// shield.match (docs/rooms.md §4.5): enqueue and cancel are calls to the
// queue's actor (Address.Queue), which answers a ticket id or whether the
// cancel took.

// The methods of a queue's actor.
const (
	MethodEnqueue = "enqueue" // args: ref, props, query (§8 JSON); result: the ticket id
	MethodCancel  = "cancel"  // args: the ticket id; result: true if it was waiting
)

// installMatch adds shield.match.enqueue and shield.match.cancel.
func (vm *VM) installMatch(sh *lua.LTable, check *lua.LFunction) {
	t := vm.l.NewTable()
	t.RawSetString("enqueue", vm.suspending(check, vm.luaMatchEnqueue))
	t.RawSetString("cancel", vm.suspending(check, vm.luaMatchCancel))
	sh.RawSetString("match", t)
}

// shield.match.enqueue(client, queue, props[, query]) -> ticket id.
func (vm *VM) luaMatchEnqueue(L *lua.LState) int {
	const name = "shield.match.enqueue"
	t := vm.running(L, name)
	ref := checkRef(L, 1)
	if ref.PlayerID == "" {
		L.RaiseError("%s: the client has no player_id", name)
	}
	queue := L.CheckString(2)
	props, err := luaProps(L.Get(3))
	if err == nil {
		err = match.CheckProps(props)
	}
	var query match.Query
	if err == nil {
		if query, err = luaQuery(L.Get(4)); err == nil {
			err = match.CheckQuery(query)
		}
	}
	if err != nil {
		L.RaiseError("%s: %v", name, err)
	}
	rb, _ := json.Marshal(RefJSON(ref))
	pb, _ := json.Marshal(props)
	qb, _ := json.Marshal(query)
	return vm.callRoom(L, t, &Call{To: Address{Queue: queue}, Method: MethodEnqueue, Args: [][]byte{rb, pb, qb}})
}

// shield.match.cancel(ticket) -> true if the ticket was waiting.
func (vm *VM) luaMatchCancel(L *lua.LState) int {
	t := vm.running(L, "shield.match.cancel")
	ticket := L.CheckString(1)
	queue, _, ok := strings.Cut(ticket, "/")
	if !ok || queue == "" {
		L.Push(lua.LFalse) // no queue's ticket: unknown
		return 1
	}
	tb, _ := json.Marshal(ticket)
	return vm.callRoom(L, t, &Call{To: Address{Queue: queue}, Method: MethodCancel, Args: [][]byte{tb}})
}

// luaScalar is a props value or an equality term: a string, a number or
// a boolean.
func luaScalar(where string, v lua.LValue) (any, error) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), nil
	case lua.LNumber:
		return float64(v), nil
	case lua.LBool:
		return bool(v), nil
	}
	return nil, fmt.Errorf("%s: a string, number or boolean is required, got %s", where, v.Type())
}

// luaEntries reads a props or query table's entries, each key a string.
func luaEntries(what string, v lua.LValue, each func(k string, v lua.LValue) error) error {
	if v == lua.LNil {
		return nil
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		return fmt.Errorf("%s: a table or nil is required, got %s", what, v.Type())
	}
	n, err := 0, error(nil)
	t.ForEach(func(k, v lua.LValue) {
		if n++; err != nil {
			return
		}
		if ks, ok := k.(lua.LString); ok {
			err = each(string(ks), v)
		} else {
			err = fmt.Errorf("%s: keys must be strings, got %s", what, k.Type())
		}
	})
	if n > match.MaxEntries {
		return fmt.Errorf("%s: more than %d entries", what, match.MaxEntries)
	}
	return err
}

func luaProps(v lua.LValue) (match.Props, error) {
	props := match.Props{}
	err := luaEntries("props", v, func(k string, v lua.LValue) error {
		s, err := luaScalar("props."+k, v)
		props[k] = s
		return err
	})
	return props, err
}

func luaQuery(v lua.LValue) (match.Query, error) {
	q := match.Query{}
	err := luaEntries("query", v, func(k string, v lua.LValue) error {
		where := "query." + k
		r, ok := v.(*lua.LTable)
		if !ok {
			eq, err := luaScalar(where, v)
			q[k] = match.Term{Eq: eq}
			return err
		}
		var term match.Term
		var err error
		r.ForEach(func(rk, rv lua.LValue) {
			n, isNum := rv.(lua.LNumber)
			f := float64(n)
			switch {
			case err != nil:
			case rk == lua.LString("min") && isNum:
				term.Min = &f
			case rk == lua.LString("max") && isNum:
				term.Max = &f
			default:
				err = fmt.Errorf("%s: a range is {min = n, max = n}, got key %s = %s", where, lua.LVAsString(rk), rv.Type())
			}
		})
		q[k] = term
		return err
	})
	return q, err
}
