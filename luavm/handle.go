package luavm

import (
	"errors"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// installCtx makes the VM's `ctx`, the first argument of every handler,
// method and hook: {service, instance, deadline}. One table serves every
// run, its deadline set to the running task's before each resume, because
// a table with string keys costs gopher-lua two maps and a slice, which
// per message was an eighth of a trivial handler's time. It is read-only
// (a new key raises), so that no run can leave anything in it for the next.
func (vm *VM) installCtx() {
	L := vm.L
	vm.ctx = L.CreateTable(0, 3)
	vm.ctxService, vm.ctxInstance = lua.LString(vm.Service), lua.LNumber(vm.Instance)
	meta := L.CreateTable(0, 2)
	meta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("ctx is read-only: one ctx serves every run of the VM (keep state in the module)")
		return 0
	}))
	meta.RawSetString("__metatable", lua.LFalse)
	vm.ctx.Metatable = meta
	vm.setCtx(lua.LNil)
}

// setCtx points ctx at a run whose deadline is deadline (unix ms, or nil),
// restoring fields a script may have overwritten.
func (vm *VM) setCtx(deadline lua.LValue) {
	vm.ctx.RawSetString("service", vm.ctxService)
	vm.ctx.RawSetString("instance", vm.ctxInstance)
	vm.ctx.RawSetString("deadline", deadline)
}

// HandleIngress runs the route's handler for a client frame (SPEC §6). A
// request always gets exactly one answer through the gateway; a notify
// never gets one.
func (vm *VM) HandleIngress(in *ingress.ClientIngress) {
	c := &in.Client
	t := &task{in: in, deadline: time.Now().Add(vm.spec.HandlerTimeout)}
	h, ok := vm.handlers[c.RouteID]
	if !ok {
		vm.respond(t, nil, codes.New(codes.HandlerMissing, "no binding for route %d in service %s", c.RouteID, vm.Service))
		return
	}
	req, err := vm.decodeRequest(in, h)
	if err != nil {
		vm.respond(t, nil, err)
		return
	}
	vm.start(t, h.fn, vm.ctx, vm.clientTable(c, h), req)
}

func routeLabel(c *ingress.ClientContext) string {
	return config.RouteLabel(int64(c.RouteID), c.Route)
}

// decodeRequest turns the body into the handler's request argument.
func (vm *VM) decodeRequest(in *ingress.ClientIngress, h handler) (_ lua.LValue, cerr *codes.Error) {
	defer vm.catch("decoding a request", &cerr)
	body := in.Body
	if h.route.Action == config.ForwardRaw {
		return lua.LString(body), nil
	}
	switch in.Codec {
	case "", "json":
		if rc := h.route.RequestCodec; rc != "" && rc != "json" {
			return lua.LString(body), nil
		}
		if len(body) == 0 {
			return lua.LNil, nil
		}
		if in.Unwrap {
			if inner, ok := codec.UnwrapLegacy(body); ok {
				body = inner
			}
		}
		v, err := codec.DecodeJSON(vm.L, body)
		if err != nil {
			// SPEC §2 request_codec: with json a body that is not JSON
			// reaches the handler as a string, never as decode_failed.
			return lua.LString(body), nil
		}
		if err := vm.spec.Schemas.Validate(h.route.ID, body); err != nil {
			return nil, asCodeError(err, codes.SchemaViolation)
		}
		return v, nil
	case "raw":
		return lua.LString(body), nil
	}
	c, ok := codec.Lookup(in.Codec)
	if !ok {
		return nil, codes.New(codes.DecodeFailed, "no body codec %q", in.Codec)
	}
	v, err := c.Decode(vm.L, codec.SchemaName(h.route), body)
	if err != nil {
		return nil, asCodeError(err, codes.DecodeFailed)
	}
	return v, nil
}

// asCodeError keeps a codec's own coded error as it is (wrapping it again
// would put the code in the message twice) and gives anything else code.
func asCodeError(err error, code codes.Code) *codes.Error {
	var ce *codes.Error
	if errors.As(err, &ce) {
		return ce
	}
	return codes.New(code, "%v", err)
}

// respond sends a request's one answer; a notify's outcome is only logged.
func (vm *VM) respond(t *task, vals []lua.LValue, err *codes.Error) {
	in := t.in
	c := &in.Client
	r := &egress.Response{SessionID: c.Ref.SessionID, RouteID: c.RouteID, RequestID: c.RequestID, Notify: in.Notify(),
		Service: vm.Service, Route: c.Route, Received: in.Received}
	if err == nil && !r.Notify {
		r.Body, err = vm.encodeResponse(t, in, vals)
	}
	if err != nil && r.Notify {
		vm.Log.Warn("notify failed", "route", t.label(), "session_id", c.Ref.SessionID, "player_id", c.Ref.PlayerID,
			"code", string(err.Code), "message", err.Message)
	}
	r.Err = err
	vm.gatewayRespond(r)
}

func (vm *VM) gatewayRespond(r *egress.Response) {
	if vm.host != nil && vm.host.Gateway() != nil {
		vm.host.Gateway().Respond(r)
	}
}

// encodeResponse encodes the handler's first return value; no value is an
// empty body.
func (vm *VM) encodeResponse(t *task, in *ingress.ClientIngress, vals []lua.LValue) (_ []byte, cerr *codes.Error) {
	defer vm.catch("encoding a response", &cerr)
	if len(vals) == 0 || vals[0] == lua.LNil {
		return nil, nil
	}
	v := vals[0]
	h := vm.handlers[in.Client.RouteID]
	if h.route != nil && h.route.Action == config.ForwardRaw || in.Codec == "raw" {
		if s, ok := v.(lua.LString); ok {
			return []byte(s), nil
		}
		return nil, vm.encodeFailed(t, "a raw route's handler must return a string, got "+v.Type().String())
	}
	if in.Codec == "" || in.Codec == "json" {
		b, err := codec.AppendJSON(nil, vm.L, v)
		if errors.Is(err, codec.ErrTooLarge) {
			return nil, codes.New(codes.ResourceExhausted, "response: %v", err)
		}
		if err != nil {
			return nil, vm.encodeFailed(t, err.Error())
		}
		return b, nil
	}
	c, ok := codec.Lookup(in.Codec)
	if !ok {
		return nil, vm.encodeFailed(t, "no body codec "+in.Codec)
	}
	schema := ""
	if h.route != nil {
		schema = codec.SchemaName(h.route)
	}
	b, err := c.Encode(vm.L, schema, v)
	if err != nil {
		return nil, vm.encodeFailed(t, err.Error())
	}
	return b, nil
}

func (vm *VM) encodeFailed(t *task, reason string) *codes.Error {
	return vm.classify(t, &lua.ApiError{Type: lua.ApiErrorRun, Object: lua.LString("response encode: " + reason)})
}

// HandleCall runs a shield.call or shield.send from another VM. The callee
// runs under min(its own handler_timeout, the caller's remaining budget).
func (vm *VM) HandleCall(c *Call) {
	now := time.Now()
	t := &task{call: c, deadline: now.Add(vm.spec.HandlerTimeout)}
	if !c.Deadline.IsZero() && c.Deadline.Before(t.deadline) {
		t.deadline = c.Deadline
	}
	if !now.Before(t.deadline) {
		// The caller's budget ran out while the call waited in the lane.
		vm.returnCall(t, nil, codes.New(codes.Timeout, "%s ran out of its budget", t.label()))
		return
	}
	fn, ok := vm.Module.RawGetString(c.Method).(*lua.LFunction)
	if !ok {
		vm.returnCall(t, nil, codes.New(codes.Unavailable, "service %s has no method %q", vm.Service, c.Method))
		return
	}
	args := make([]lua.LValue, 0, len(c.Args)+1)
	args = append(args, vm.ctx)
	for _, a := range c.Args {
		args = append(args, ToLua(vm.L, a))
	}
	vm.start(t, fn, args...)
}

// returnCall sends a call's results back to its caller. A send has no
// caller waiting; its failure is logged.
func (vm *VM) returnCall(t *task, vals []lua.LValue, err *codes.Error) {
	c := t.call
	if c.ID == 0 {
		if err != nil {
			vm.Log.Warn("shield.send handler failed", "method", c.Method, "from", c.From.Service, "code", string(err.Code), "message", err.Message)
		}
		return
	}
	r := &Result{To: c.From, ID: c.ID, Gen: c.Gen, Err: err}
	if err == nil && len(vals) > 0 {
		r.Values = make([]Value, 0, len(vals))
		for _, v := range vals {
			gv, cerr := ToGo(vm.L, v)
			if cerr != nil {
				r.Values, r.Err = nil, vm.encodeFailed(t, "result: "+cerr.Error())
				break
			}
			r.Values = append(r.Values, gv)
		}
	}
	if vm.host != nil {
		vm.host.Return(r)
	}
}

// HandleDisconnected runs client_disconnected(ctx, client, reason), if the
// module has it.
func (vm *VM) HandleDisconnected(d *ingress.Disconnected) {
	if vm.ClientDisconnected == nil {
		return
	}
	t := &task{what: "client_disconnected", deadline: time.Now().Add(vm.spec.HandlerTimeout)}
	vm.start(t, vm.ClientDisconnected, vm.ctx, vm.refTable(d.Ref), lua.LString(d.Reason))
}

// RunHook runs init or stop (whichever fn is) as a task; done gets its
// outcome, nil on success. A VM without the hook reports success at once.
func (vm *VM) RunHook(name string, fn *lua.LFunction, done func(err *codes.Error)) {
	if fn == nil {
		done(nil)
		return
	}
	t := &task{what: name, deadline: time.Now().Add(vm.spec.HandlerTimeout)}
	t.onDone = func(_ []lua.LValue, err *codes.Error) { done(err) }
	vm.start(t, fn, vm.ctx)
}
