package luavm

import (
	"errors"
	"slices"
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
	L := vm.l
	vm.ctx = L.CreateTable(0, 3)
	vm.ctxService, vm.ctxInstance = lua.LString(vm.service), lua.LNumber(vm.instance)
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
	if vm.room != nil {
		vm.ctx.RawSetString("room", vm.room.obj)
	}
}

// readAndNow returns when the gateway read a frame (received, or now when
// it says nothing) and the time now, with one reading of the clock: the
// time since received is one monotonic reading, where time.Now's two (wall
// and monotonic) cost a few percent of a forward_raw echo's CPU.
func readAndNow(received time.Time) (read, now time.Time) {
	if received.IsZero() {
		now = time.Now()
		return now, now
	}
	return received, received.Add(time.Since(received))
}

// HandleIngress runs the route's handler for a client frame (SPEC §4, §6).
// A request gets exactly one answer through the gateway, whatever
// happens; a notify never gets one, but its outcome is reported too. in is
// the VM's from now on: it is given back (ingress.ClientIngress.Release)
// once answered.
func (vm *VM) HandleIngress(in *ingress.ClientIngress) {
	c := &in.Client
	read, now := readAndNow(in.Received)
	t := vm.newTask()
	// The handler_timeout counts from the read, so time spent waiting in
	// the mailbox is spent from it (SPEC §6); a budget the client declared
	// shortens it.
	t.in, t.deadline = in, read.Add(in.BudgetWithin(vm.spec.HandlerTimeout))
	defer vm.recycle(t)
	// SPEC §4: a frame whose session closed does not run (its answer goes
	// nowhere, but is counted), and one from before a rebind is stale.
	if code, ok := vm.stale.check(c.Ref, now); ok {
		vm.finish(t, nil, codes.New(code, "the session's epoch %d is over", c.Ref.Epoch))
		return
	}
	if !now.Before(t.deadline) {
		vm.finish(t, nil, codes.New(codes.Timeout, "%s ran out of its budget waiting in the mailbox", t.label()))
		return
	}
	h := vm.handlers[c.RouteID]
	if h == nil {
		vm.finish(t, nil, codes.New(codes.HandlerMissing, "no binding for route %d in service %s", c.RouteID, vm.service))
		return
	}
	t.handler = h
	if h.builtin {
		vm.builtinRoute(t, in, h)
		return
	}
	if vm.room != nil && vm.roomIngress(t, in, h) {
		return
	}
	vm.traceIngress(t, now)
	req, err := vm.decodeRequest(in, h)
	if err != nil {
		vm.finish(t, nil, err)
		return
	}
	vm.start(t, h.fn, vm.ctx, vm.frameClient(c, h), req)
}

func routeLabel(c *ingress.ClientContext) string {
	return config.RouteLabel(int64(c.RouteID), c.Route)
}

// decodeRequest turns the body into the handler's request argument, with
// the route's body codec (package codec owns the policy).
func (vm *VM) decodeRequest(in *ingress.ClientIngress, h *handler) (_ lua.LValue, cerr *codes.Error) {
	if h.builtin {
		return lua.LString(in.Body), nil
	}
	if h.lazy && !codec.DecodeObservable(h.route, in.Codec, vm.spec.Schemas) {
		return lua.LNil, nil // lazy_decode: the handler never sees req
	}
	defer vm.catch("decoding a request", &cerr)
	v, err := codec.DecodeRequest(vm.l, h.route, in.Codec, in.Body, in.Unwrap, vm.spec.Schemas)
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

// respond sends a client task's one answer, or a notify's outcome. It is
// called by finish only, once per task.
func (vm *VM) respond(t *task, vals []lua.LValue, err *codes.Error) {
	in := t.in
	var body []byte
	if err == nil && !in.Notify() {
		body, err = vm.encodeResponse(t, vals)
	}
	if err != nil && in.Notify() && err.Code != codes.SessionNotFound && err.Code != codes.EpochExpired {
		c := &in.Client
		vm.log.Warn("notify failed", "route", t.label(), "session_id", c.Ref.SessionID, "player_id", playerAttr(c.Ref.PlayerID),
			"code", string(err.Code), "message", err.Message)
	}
	switch s := vm.sink().(type) {
	case nil:
	case egress.ValueSink: // the actor's answer buffer: no allocation for the answer
		s.RespondValue(in.AnswerValue(vm.service, body, err))
	default:
		s.Respond(in.Answer(vm.service, body, err))
	}
}

// sink is where answers, pushes, binds and kicks go, or nil.
func (vm *VM) sink() egress.Sink {
	if vm.host == nil {
		return nil
	}
	return vm.host.Sink()
}

// encodeResponse encodes the handler's first return value with the
// route's body codec; no value is an empty body.
func (vm *VM) encodeResponse(t *task, vals []lua.LValue) (_ []byte, cerr *codes.Error) {
	defer vm.catch("encoding a response", &cerr)
	if len(vals) == 0 || vals[0] == lua.LNil {
		return nil, nil
	}
	if t.handler.builtin {
		b, err := EncodeValue(vm.l, vals[0]) // JSON, whatever the codec (docs/rooms.md §8.1)
		if err != nil {
			return nil, vm.encodeFailed(t, err.Error())
		}
		return b, nil
	}
	b, err := codec.EncodeResponse(vm.l, t.handler.route, t.in.Codec, vals[0])
	if errors.Is(err, codec.ErrTooLarge) {
		return nil, codes.New(codes.ResourceExhausted, "response: %v", err)
	}
	if err != nil {
		return nil, vm.encodeFailed(t, err.Error())
	}
	return b, nil
}

func (vm *VM) encodeFailed(t *task, reason string) *codes.Error {
	return vm.classify(t, &lua.ApiError{Type: lua.ApiErrorRun, Object: lua.LString("response encode: " + reason)})
}

// HandleCall runs a shield.call or shield.send from another VM (SPEC §8).
// A call's callee runs under min(its own handler_timeout, the caller's
// remaining budget); a send's under its own. A hook, or the binding of a
// client route, is not a method: a client handler only ever receives a
// client the gateway made.
func (vm *VM) HandleCall(c *Call) {
	if vm.room != nil {
		defer vm.afterRoomRun()
		if vm.handleRoomCall(c) {
			return
		}
	}
	now := time.Now()
	t := vm.newTask()
	t.call, t.deadline = c, now.Add(vm.spec.HandlerTimeout)
	defer vm.recycle(t)
	if !c.Deadline.IsZero() && c.Deadline.Before(t.deadline) {
		t.deadline = c.Deadline
	}
	if !now.Before(t.deadline) {
		// The caller's budget ran out while the call waited in the lane.
		vm.finish(t, nil, codes.New(codes.Timeout, "%s ran out of its budget", t.label()))
		return
	}
	if err := vm.methodError(c.Method); err != nil {
		vm.finish(t, nil, err)
		return
	}
	vm.traceMethod(t, now)
	fn, ok := vm.module.RawGetString(c.Method).(*lua.LFunction)
	if !ok {
		vm.finish(t, nil, codes.New(codes.Unavailable, "service %s has no method %q", vm.service, c.Method))
		return
	}
	args := make([]lua.LValue, 0, len(c.Args)+1)
	args = append(args, vm.ctx)
	for _, a := range c.Args {
		v, err := DecodeValue(vm.l, a)
		if err != nil {
			vm.finish(t, nil, codes.New(codes.Unavailable, "argument of %s: %v", c.Method, err))
			return
		}
		args = append(args, v)
	}
	vm.start(t, fn, args...)
}

// MethodError is why name may not be called as a method of this VM's
// service (a hook, or a client route's handler), or nil. It reads only
// what New set, so the runtime checks it from the caller's goroutine and a
// shield.send learns it at once.
func (vm *VM) MethodError(name string) *codes.Error { return vm.methodError(name) }

func (vm *VM) methodError(name string) *codes.Error {
	switch {
	case isHook(name), vm.spec.Room != nil && slices.Contains(roomHooks, name):
		return codes.New(codes.Unavailable, "%q is a hook of service %s, run by the runtime only: not a method", name, vm.service)
	case vm.bindings[name]:
		return codes.New(codes.Unavailable, "%q is the handler of a client route of service %s: not a method", name, vm.service)
	}
	return nil
}

// returnCall sends a call's results back to its caller, each copied out
// under the JSON mapping. A send has no caller waiting; its failure is
// logged.
func (vm *VM) returnCall(t *task, vals []lua.LValue, err *codes.Error) {
	c := t.call
	if c.ID == 0 {
		if err != nil {
			vm.log.Warn("shield.send handler failed", "method", c.Method, "from", c.From.Service, "code", string(err.Code), "message", err.Message)
		}
		return
	}
	r := &Result{To: c.From, ID: c.ID, Gen: c.Gen, Err: err, Reply: c.Reply}
	if err == nil && len(vals) > 0 {
		r.Values = make([][]byte, len(vals))
		for i, v := range vals {
			b, cerr := EncodeValue(vm.l, v)
			if cerr != nil {
				r.Values, r.Err = nil, vm.encodeFailed(t, "result: "+cerr.Error())
				break
			}
			r.Values[i] = b
		}
	}
	if vm.host != nil {
		vm.host.Return(r)
	}
}

// HandleControl handles a message of the control lane: a reply or a
// timer's result, or a session's lifecycle message, which runs the
// matching hook if the module has it.
func (vm *VM) HandleControl(m any) {
	if vm.room != nil {
		defer vm.afterRoomRun()
		switch m.(type) {
		case *ingress.Bound, *ingress.Suspended, *ingress.Resumed, *ingress.Disconnected:
			vm.roomSession(m)
			return
		}
	}
	switch m := m.(type) {
	case *Result:
		vm.HandleResult(m)
	case *ingress.Bound:
		vm.runSessionHook("client_bound", m.Ref, vm.sessionClient(m.Ref, m.RemoteAddr, clientSession), vm.boundFrom(m))
	case *ingress.Suspended:
		vm.runSessionHook("client_suspended", m.Ref, vm.sessionClient(m.Ref, m.RemoteAddr, clientSession))
	case *ingress.Resumed:
		vm.runSessionHook("client_resumed", m.Ref, vm.sessionClient(m.Ref, m.RemoteAddr, clientSession))
	case *ingress.Disconnected:
		// From now on, frames of the session still queued here are stale.
		vm.stale.mark(m.Ref.SessionID, m.Ref.Epoch, true, time.Now(), vm.spec.HandlerTimeout)
		vm.runSessionHook("client_disconnected", m.Ref, vm.sessionClient(m.Ref, "", clientRefOnly), lua.LString(m.Reason))
	default:
		panic("luavm: unknown control message")
	}
}

// boundFrom is client_bound's third argument (docs/rooms.md §5.1): after a
// room bound its member back here, {room = id, reason = why}; nil for every
// other bind, so hooks written before rooms may ignore it.
func (vm *VM) boundFrom(m *ingress.Bound) lua.LValue {
	if m.FromRoom == "" {
		return lua.LNil
	}
	t := vm.l.CreateTable(0, 2)
	t.RawSetString("room", lua.LString(m.FromRoom))
	t.RawSetString("reason", lua.LString(m.Left))
	return t
}

// runSessionHook runs a session hook about ref with its arguments after
// ctx, if the module has it. Its log lines carry the session's ids.
func (vm *VM) runSessionHook(name string, ref egress.ClientRef, args ...lua.LValue) {
	fn := vm.hooks[name]
	if fn == nil {
		return
	}
	t := &task{what: name, deadline: time.Now().Add(vm.spec.HandlerTimeout), ref: &ref}
	vm.start(t, fn, append([]lua.LValue{vm.ctx}, args...)...)
}

// RunHook runs one of the VM's own hooks (init, stop, draining) as a task;
// done gets its outcome, nil on success. A VM without the hook reports
// success at once.
func (vm *VM) RunHook(name string, done func(err *codes.Error)) {
	fn := vm.hooks[name]
	if fn == nil {
		done(nil)
		return
	}
	t := &task{what: name, deadline: time.Now().Add(vm.spec.HandlerTimeout)}
	t.onDone = func(_ []lua.LValue, err *codes.Error) { done(err) }
	vm.start(t, fn, vm.ctx)
}

// RunSave runs the module's reload_save(ctx) (SPEC §12) as a task; done
// gets the state it returned, copied out under the JSON mapping, or its
// error. A VM without the hook reports nil at once.
func (vm *VM) RunSave(done func(state []byte, err *codes.Error)) {
	fn := vm.hooks["reload_save"]
	if fn == nil {
		done(nil, nil)
		return
	}
	t := &task{what: "reload_save", deadline: time.Now().Add(vm.spec.HandlerTimeout)}
	t.onDone = func(vals []lua.LValue, err *codes.Error) {
		if err != nil {
			done(nil, err)
			return
		}
		var state []byte
		if len(vals) > 0 {
			b, cerr := EncodeValue(vm.l, vals[0])
			if cerr != nil {
				done(nil, codes.New(codes.HandlerFailed, "reload_save: the state cannot be copied: %v", cerr))
				return
			}
			state = b
		}
		done(state, nil)
	}
	vm.start(t, fn, vm.ctx)
}

// RunLoad runs the module's reload_load(ctx, state) with what the old
// VM's reload_save returned; done gets its outcome.
func (vm *VM) RunLoad(state []byte, done func(err *codes.Error)) {
	fn := vm.hooks["reload_load"]
	if fn == nil {
		done(nil)
		return
	}
	v, err := DecodeValue(vm.l, state)
	if err != nil {
		done(codes.New(codes.HandlerFailed, "reload_load: %v", err))
		return
	}
	t := &task{what: "reload_load", deadline: time.Now().Add(vm.spec.HandlerTimeout)}
	t.onDone = func(_ []lua.LValue, err *codes.Error) { done(err) }
	vm.start(t, fn, vm.ctx, v)
}

// DropTimers forgets the shield.timeout callbacks not yet fired: a VM
// replaced by a reload finishes its runs but starts no new ones (SPEC
// §12). Sleeps and budgets of runs in flight stay.
func (vm *VM) DropTimers() {
	for id, p := range vm.pending {
		if p.kind == pendTimeout {
			delete(vm.pending, id)
			vm.timers.remove(p.timer)
		}
	}
}

// SetLimits changes the budget and max_pending of the runs the VM starts
// from now on (a reload that changes handler_timeout or max_pending
// only).
func (vm *VM) SetLimits(handlerTimeout time.Duration, maxPending int) {
	if handlerTimeout > 0 {
		vm.spec.HandlerTimeout = handlerTimeout
	}
	if maxPending > 0 {
		vm.spec.MaxPending = maxPending
	}
}

// SetSchemas changes the JSON Schemas requests are validated against (a
// reload whose schema files changed but not the VM's code).
func (vm *VM) SetSchemas(s *codec.Schemas) { vm.spec.Schemas = s }

// Gen is the VM's generation: a Result with another Gen is not its own.
func (vm *VM) Gen() uint64 { return vm.gen }
