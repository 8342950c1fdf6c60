package luavm

import (
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/tracing"
)

// The VM's spans (docs/tracing.md): a client frame's queue wait and
// handler run, a method's run, and each shield.call, shield.send and op a
// traced task makes. Each starts only when the VM has a tracer and the
// message it runs carries a span to be the parent (a hook, a timer or an
// untraced caller starts none), so with tracing off each site is one nil
// test.

// outcome is a span's shield.outcome for err.
func outcome(err *codes.Error) string {
	if err == nil {
		return "ok"
	}
	return string(err.Code)
}

// traceIngress starts the spans of a client frame's run: its wait in the
// business lane, ended now, and its handler, which finish ends.
func (vm *VM) traceIngress(t *task, now time.Time) {
	in := t.in
	if vm.tr == nil || !in.Trace.Valid() {
		return
	}
	queued := in.Enqueued
	if queued.IsZero() || queued.After(now) {
		queued = in.Received
	}
	q := vm.tr.Child(in.Trace, "shield.queue", tracing.Internal, queued, vm.traceService, vm.traceInstance)
	q.End("ok", now)
	c := &in.Client
	route := t.handler.route.Name
	t.span = vm.tr.Child(in.Trace, "shield.handler "+route, tracing.Internal, now,
		vm.traceService, vm.traceInstance, tracing.String("shield.route", route),
		tracing.Uint("shield.session_id", c.Ref.SessionID))
	if c.Ref.PlayerID != "" {
		t.span.Set(tracing.String("shield.player_id", c.Ref.PlayerID))
	}
}

// traceMethod starts the span of a shield.call's or shield.send's run in
// its callee.
func (vm *VM) traceMethod(t *task, now time.Time) {
	c := t.call
	if vm.tr == nil || !c.Trace.Valid() {
		return
	}
	kind := tracing.Server
	if c.ID == 0 {
		kind = tracing.Consumer
	}
	t.span = vm.tr.Child(c.Trace, "shield.method "+vm.service+"."+c.Method, kind, now,
		vm.traceService, vm.traceInstance, tracing.String("shield.method", c.Method))
}

// traceOut starts a span under the running task's for something it sends
// out (a call, a send, an op), or returns the zero Span when the task is
// not traced.
func (vm *VM) traceOut(t *task, name string, kind tracing.Kind, attrs ...tracing.Attr) tracing.Span {
	if vm.tr == nil || t == nil || !t.span.Active() {
		return tracing.Span{}
	}
	return vm.tr.Child(t.span.Context(), name, kind, time.Now(), attrs...)
}

// opOutcomeCode is the code of an op's result as its task resumes with it
// (true and values, or false and an error value or a misuse message).
func (vm *VM) opOutcomeCode(vals []lua.LValue) string {
	if len(vals) == 0 || vals[0] != lua.LFalse {
		return "ok"
	}
	if len(vals) > 1 {
		if tbl, ok := vals[1].(*lua.LTable); ok && tbl.Metatable == vm.errMeta {
			return lua.LVAsString(tbl.RawGetString("code"))
		}
	}
	return "misuse"
}

// traceLog is the trace_id and span_id of a log line written by the
// running task, when it is traced.
func (vm *VM) traceLog() (traceID, spanID string, ok bool) {
	t := vm.current
	if t == nil || !t.span.Active() {
		return "", "", false
	}
	c := t.span.Context()
	return c.TraceIDString(), c.SpanIDString(), true
}
