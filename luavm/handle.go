package luavm

import (
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// ctxTable is a handler's `ctx` argument.
func (vm *VM) ctxTable(deadline time.Time) *lua.LTable {
	t := vm.L.CreateTable(0, 3)
	t.RawSetString("service", lua.LString(vm.Service))
	t.RawSetString("instance", lua.LNumber(vm.Instance))
	if !deadline.IsZero() {
		t.RawSetString("deadline", lua.LNumber(deadline.UnixMilli()))
	}
	return t
}

// HandleIngress runs the route's handler for a client frame (SPEC §6). A
// request always gets exactly one answer through the gateway; a notify
// never gets one.
func (vm *VM) HandleIngress(in *ingress.ClientIngress) {
	c := &in.Client
	t := &task{in: in, what: routeLabel(c), deadline: time.Now().Add(vm.spec.HandlerTimeout)}
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
	vm.start(t, h.fn, vm.ctxTable(t.deadline), vm.clientTable(c), req)
}

func routeLabel(c *ingress.ClientContext) string {
	return config.RouteLabel(int64(c.RouteID), c.Route)
}

// decodeRequest turns the body into the handler's request argument.
func (vm *VM) decodeRequest(in *ingress.ClientIngress, h handler) (lua.LValue, *codes.Error) {
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
		return v, nil
	case "raw":
		return lua.LString(body), nil
	}
	c, ok := codec.Lookup(in.Codec)
	if !ok {
		return nil, codes.New(codes.DecodeFailed, "no body codec %q", in.Codec)
	}
	v, err := c.Decode(vm.L, h.route.RequestSchema, body)
	if err != nil {
		return nil, codes.New(codes.DecodeFailed, "%v", err)
	}
	return v, nil
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
		vm.Log.Warn("notify failed", "route", t.what, "session_id", c.Ref.SessionID, "player_id", c.Ref.PlayerID,
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
func (vm *VM) encodeResponse(t *task, in *ingress.ClientIngress, vals []lua.LValue) ([]byte, *codes.Error) {
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
		schema = h.route.RequestSchema
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
	t := &task{call: c, what: "method " + c.Method, deadline: time.Now().Add(vm.spec.HandlerTimeout)}
	if !c.Deadline.IsZero() && c.Deadline.Before(t.deadline) {
		t.deadline = c.Deadline
	}
	fn, ok := vm.Module.RawGetString(c.Method).(*lua.LFunction)
	if !ok {
		vm.returnCall(t, nil, codes.New(codes.Unavailable, "service %s has no method %q", vm.Service, c.Method))
		return
	}
	args := make([]lua.LValue, 0, len(c.Args)+1)
	args = append(args, vm.ctxTable(t.deadline))
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
	r := &Result{To: c.From, ID: c.ID, Err: err}
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
	vm.start(t, vm.ClientDisconnected, vm.ctxTable(t.deadline), vm.refTable(d.Ref), lua.LString(d.Reason))
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
	vm.start(t, fn, vm.ctxTable(t.deadline))
}
