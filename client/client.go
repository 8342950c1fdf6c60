// Package client is a Go client for Shield gateways, for game clients,
// bots, load tools and tests. It speaks every envelope of SPEC §3 over
// TCP or WebSocket, either of them over TLS, pairs requests with their
// answers, dispatches pushes, notices and status frames, sends
// heartbeats, and, with Options.Reconnect, survives a dropped connection:
// it reconnects with exponential backoff and jitter and resumes the
// session with its latest resume token (SPEC §4 Resume), then tells the
// app whether the session survived or the player must log in again.
//
// A Client is safe for concurrent use: any number of goroutines may Call
// at once; their requests are pipelined on the one connection.
//
// Routes may be named instead of numbered (CallName, NotifyName,
// OnPushName) with Options.Routes: a generated stub package's Routes
// (`gateway gen -lang go`), or RoutesFrom a gateway's config file.
package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
)

// Options configure Dial. The zero value speaks idlen with the defaults.
type Options struct {
	Envelope       string        // idlen (default), typelen, lenprefix or delimiter
	MaxFrameBytes  int           // the largest frame accepted from the gateway; default 65536
	HeartbeatEvery time.Duration // default 15s; negative: no heartbeats

	// Transport is tcp (the default) or ws: a WebSocket upgrade at Path
	// on the address, then one frame per message.
	Transport string
	// Path is the ws upgrade path; default /ws.
	Path string
	// Origin, when set, is sent as the ws upgrade's Origin header, as a
	// browser would; native clients send none.
	Origin string
	// TLS, when set, runs the connection over TLS (wss:// for ws). An
	// empty ServerName is taken from the address's host; Certificates
	// hold the client's own for a mutual-TLS listener.
	TLS *tls.Config
	// Resume, when set, is a resume token (Client.ResumeToken of an
	// earlier connection): the first frame resumes that session (SPEC §4).
	// The gateway answers with the status session.resumed or
	// session.resume_failed (see OnStatus).
	Resume string
	// Routes, when set, lets CallName, NotifyName and OnPushName take
	// route names: a generated stub package's Routes, or RoutesFrom a
	// gateway's config.
	Routes *Routes
	// Reconnect, when set, makes the client survive a dropped connection
	// (see Reconnect). Nil: the client ends with its first connection.
	Reconnect *Reconnect
	// DeclareDeadlines makes each Call whose ctx has a deadline declare
	// the time left as the request's budget (docs/protocol.md
	// "Deadlines"): the handler then has min(it, handler_timeout), the
	// gateway clamping it to [1 s, 60 s], and gives up when the caller
	// has. Off by default: a gateway older than the feature closes the
	// connection on the Deadline frame.
	DeclareDeadlines bool
	// Setup, when set, runs inside Dial before the client reads its first
	// frame: set the handlers there (OnStatus, OnPush, Room) that must see
	// what comes first, such as a resume's session.resumed and the frames
	// queued for the suspended session.
	Setup func(*Client)
}

// Notice is a notice frame (SPEC §3): the gateway closes the session
// right after it.
type Notice struct {
	Code    string // session.kicked, session.idle_timeout, gateway.draining, ...
	Message string
	// RetryAfterMS is the notice's retry_after_ms, when it has one: how
	// long to wait before connecting again (a drained session's).
	RetryAfterMS int64
}

// ErrClosed is returned by calls on a closed client, or one whose
// connection ended; Err tells why it ended. Every error of a call that
// got no answer because the connection went away matches it with
// errors.Is: ErrNotConnected and *DisconnectedError too.
var ErrClosed = errors.New("client: connection closed")

// ErrNotConnected is returned by calls and notifies while the client is
// reconnecting: nothing is queued for later, the app decides what to
// retry. It matches ErrClosed.
var ErrNotConnected = fmt.Errorf("%w: reconnecting", ErrClosed)

// DisconnectedError is a call whose connection dropped before its answer
// came. The request is never sent again (it may or may not have run):
// the app decides whether to retry. It matches ErrClosed.
type DisconnectedError struct {
	Cause  error   // why the connection ended (io.EOF when the gateway closed it)
	Notice *Notice // the notice that came first, if one did
}

func (e *DisconnectedError) Error() string {
	if e.Notice != nil {
		return fmt.Sprintf("client: the gateway closed the session before the answer (%s: %s)", e.Notice.Code, e.Notice.Message)
	}
	return fmt.Sprintf("client: the connection dropped before the answer: %v", e.Cause)
}

// Is makes a DisconnectedError match ErrClosed.
func (e *DisconnectedError) Is(target error) bool { return target == ErrClosed }

// Unwrap returns the cause.
func (e *DisconnectedError) Unwrap() error { return e.Cause }

// Client is one client of a gateway: one connection at a time, and with
// Options.Reconnect the ones that follow it after a drop.
type Client struct {
	addr  string
	o     Options
	maxID uint64

	wmu sync.Mutex // serialises writes to every link's transport

	mu           sync.Mutex // guards the fields below and every link's drop
	link         *link      // the open connection; nil while reconnecting and after the end
	pending      map[uint64]chan envelope.Frame
	pushes       map[uint32]func(body []byte)
	anyPush      func(route uint32, body []byte)
	notice       func(code, message string)
	status       func(Status)
	onDisconnect func(DisconnectInfo)
	onReconnect  func(ReconnectInfo)
	token        string
	err          error // why the client ended; nil while it lives
	closing      bool  // Close was called
	room         *Room // set up by the first Room call (room.go)

	nextID atomic.Uint64
	done   chan struct{} // closed when the client has ended for good
	quit   chan struct{} // closed by Close
	once   sync.Once
	wg     sync.WaitGroup // every goroutine of every link, and the reconnect loop
}

// Dial connects to addr (host:port) and starts the client's goroutines.
// ctx bounds the dial and the TLS and WebSocket handshakes only. The first
// connection is not retried: an error here is the app's to handle.
func Dial(ctx context.Context, addr string, o Options) (*Client, error) {
	if o.Envelope == "" {
		o.Envelope = envelope.NameIdlen
	}
	if o.MaxFrameBytes == 0 {
		o.MaxFrameBytes = 65536
	}
	if o.HeartbeatEvery == 0 {
		o.HeartbeatEvery = 15 * time.Second
	}
	if o.Reconnect != nil {
		r := o.Reconnect.withDefaults()
		o.Reconnect = &r
	}
	c := &Client{addr: addr, o: o, pending: map[uint64]chan envelope.Frame{}, pushes: map[uint32]func([]byte){},
		done: make(chan struct{}), quit: make(chan struct{}), maxID: 1<<64 - 1}
	if o.Envelope == envelope.NameIdlen {
		c.maxID = envelope.MaxIdlenRequestID
	}
	l, err := c.dialLink(ctx)
	if err != nil {
		return nil, err
	}
	if o.Resume != "" {
		if err := c.sendOn(ctx, l, &envelope.Frame{Kind: envelope.Heartbeat, Token: o.Resume}); err != nil {
			l.t.close()
			return nil, err
		}
	}
	if o.Setup != nil {
		o.Setup(c)
	}
	c.link = l
	c.startLink(l)
	return c, nil
}

// Close closes the connection, stops any reconnect, and waits for the
// client's goroutines. Calls waiting for an answer return ErrClosed.
func (c *Client) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closing = true
		l := c.link
		c.mu.Unlock()
		close(c.quit)
		if l != nil {
			l.t.close()
		}
	})
	c.wg.Wait()
	c.mu.Lock()
	c.endLocked(ErrClosed) // a client that was reconnecting has no read loop to end it
	c.mu.Unlock()
	return nil
}

// Done is closed when the client has ended for good: by Close, by the
// gateway (without Options.Reconnect, or after a notice that ends the
// session), or when reconnecting gave up.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the client ended: nil while it lives (reconnecting too),
// ErrClosed after Close, the read error of its last connection (io.EOF
// when the gateway closed it), or a *GaveUpError.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Connected reports whether calls may be made now: false while the client
// reconnects and after it ended.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.link != nil && c.err == nil
}

// LocalAddr is the client's end of the current connection, nil while it
// reconnects.
func (c *Client) LocalAddr() net.Addr {
	c.mu.Lock()
	l := c.link
	c.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.t.localAddr()
}

// OnPush sets the handler of pushes on route (nil removes it). Handlers run
// on the read loop: keep them short, and do not Call from them (the
// answer would wait for the very loop that runs the handler).
func (c *Client) OnPush(route uint32, fn func(body []byte)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fn == nil {
		delete(c.pushes, route)
		return
	}
	c.pushes[route] = fn
}

// OnAnyPush sets a handler for pushes on routes without their own.
func (c *Client) OnAnyPush(fn func(route uint32, body []byte)) {
	c.mu.Lock()
	c.anyPush = fn
	c.mu.Unlock()
}

// OnNotice sets the handler of notices (session.kicked, gateway.draining,
// ...), which arrive just before the gateway closes the connection.
func (c *Client) OnNotice(fn func(code, message string)) {
	c.mu.Lock()
	c.notice = fn
	c.mu.Unlock()
}

// Status is a status frame (SPEC §3): route 0, request 0, a code that is
// not a notice's, and the session goes on. A client ignores codes it does
// not know.
type Status struct {
	Code    string // session.resume_token, session.resumed, session.resume_failed, gateway.drain_started, ...
	Message string // session.resume_failed
	Token   string // session.resume_token, session.resumed
	GraceMS int64  // gateway.drain_started
	// RetryAfterMS is gateway.drain_started's retry_after_ms, when an
	// operator drains this one session: come back after it.
	RetryAfterMS int64
}

// OnStatus sets the handler of status frames. The client itself keeps the
// latest resume token (ResumeToken) whether or not a handler is set.
func (c *Client) OnStatus(fn func(Status)) {
	c.mu.Lock()
	c.status = fn
	c.mu.Unlock()
}

// ResumeToken is the latest resume token the gateway gave this session
// (session.resume_token or session.resumed), "" when none: with it, a new
// connection may resume the session (Options.Resume; Options.Reconnect
// does it by itself).
func (c *Client) ResumeToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// Routes is Options.Routes (nil when none was given).
func (c *Client) Routes() *Routes { return c.o.Routes }

// Call sends a request on route and waits for its one answer; ctx bounds
// the write as well as the wait. req is
// encoded as JSON unless it is a []byte (sent as is) or nil (empty body);
// resp, if not nil, is decoded from the response body as JSON, or set as
// is when it is a *[]byte. An error frame comes back as a *codes.Error
// whose Code is the gateway's code. A call whose connection drops first
// returns a *DisconnectedError and is never sent again; while the client
// reconnects, Call returns ErrNotConnected at once.
func (c *Client) Call(ctx context.Context, route uint32, req, resp any) error {
	body, err := encode(req)
	if err != nil {
		return err
	}
	id := c.newID()
	ch := make(chan envelope.Frame, 1)
	c.mu.Lock()
	l, err := c.currentLocked()
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	f := &envelope.Frame{Kind: envelope.Request, RouteID: route, RequestID: id, Body: body}
	if err := c.sendRequest(ctx, l, f); err != nil {
		return err
	}
	select {
	case f := <-ch:
		return answer(f, resp)
	case <-l.gone:
		select {
		case f := <-ch: // the answer came just before the end
			return answer(f, resp)
		default:
		}
		return c.lostErr(l)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CallName is Call on the route named name in Options.Routes; a name it
// does not have is an *UnknownRouteError.
func (c *Client) CallName(ctx context.Context, name string, req, resp any) error {
	id, ok := c.o.Routes.ID(name)
	if !ok {
		return &UnknownRouteError{Name: name}
	}
	return c.Call(ctx, id, req, resp)
}

// Notify sends a notify on route: no answer ever comes. While the client
// reconnects it returns ErrNotConnected and the notify is dropped.
func (c *Client) Notify(route uint32, req any) error {
	body, err := encode(req)
	if err != nil {
		return err
	}
	c.mu.Lock()
	l, err := c.currentLocked()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.sendOn(context.Background(), l, &envelope.Frame{Kind: envelope.Notify, RouteID: route, Body: body})
}

// NotifyName is Notify on the route named name in Options.Routes.
func (c *Client) NotifyName(name string, req any) error {
	id, ok := c.o.Routes.ID(name)
	if !ok {
		return &UnknownRouteError{Name: name}
	}
	return c.Notify(id, req)
}

// OnPushName is OnPush on the route named name in Options.Routes.
func (c *Client) OnPushName(name string, fn func(body []byte)) error {
	id, ok := c.o.Routes.ID(name)
	if !ok {
		return &UnknownRouteError{Name: name}
	}
	c.OnPush(id, fn)
	return nil
}

// Heartbeat sends one heartbeat; the gateway echoes it.
func (c *Client) Heartbeat() error {
	c.mu.Lock()
	l, err := c.currentLocked()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.sendOn(context.Background(), l, &envelope.Frame{Kind: envelope.Heartbeat})
}

// WriteRaw writes bytes to the connection as they are (over ws, as one
// message of the envelope's type): for tests that send what no
// well-behaved client would.
func (c *Client) WriteRaw(b []byte) error {
	c.mu.Lock()
	l, err := c.currentLocked()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return l.t.writeRaw(context.Background(), b)
}

// currentLocked is the link calls go out on, or why there is none.
func (c *Client) currentLocked() (*link, error) {
	switch {
	case c.err != nil || c.closing:
		return nil, ErrClosed
	case c.link == nil:
		return nil, ErrNotConnected
	}
	return c.link, nil
}

// lostErr is the error of a call whose link ended before its answer.
func (c *Client) lostErr(l *link) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return ErrClosed
	}
	return &DisconnectedError{Cause: l.endErr(), Notice: l.notice}
}

// endLocked ends the client for good with err, once: the first reason wins.
func (c *Client) endLocked(err error) {
	if c.err != nil {
		return
	}
	if c.closing {
		err = ErrClosed
	}
	c.err = err
	close(c.done)
}

func (c *Client) newID() uint64 {
	for {
		id := c.nextID.Add(1)
		if c.maxID != 1<<64-1 {
			id %= c.maxID + 1
		}
		if id != 0 {
			return id
		}
	}
}

// sendOn writes one frame on l by ctx's deadline (at most writeTimeout).
func (c *Client) sendOn(ctx context.Context, l *link, f *envelope.Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return l.t.writeFrame(ctx, f)
}

// sendRequest writes a request on l, with its declared deadline when
// Options.DeclareDeadlines and ctx has one, and ctx's traceparent
// (WithTraceParent): on the legacy envelopes in the request's wrapper, on
// the header envelopes in a Deadline frame written with the request, in
// one write (one message each on ws), so that no other frame comes
// between them.
func (c *Client) sendRequest(ctx context.Context, l *link, f *envelope.Frame) error {
	ms := declaredMS(ctx, c.o.DeclareDeadlines)
	tp, _ := ctx.Value(traceParentKey{}).(string)
	if ms == 0 && tp == "" {
		return c.sendOn(ctx, l, f)
	}
	if legacy := c.o.Envelope == envelope.NameLenprefix || c.o.Envelope == envelope.NameDelimiter; legacy {
		f.DeadlineMS, f.TraceParent = ms, tp
		return c.sendOn(ctx, l, f)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return l.t.writeFrames(ctx, &envelope.Frame{Kind: envelope.Deadline, RequestID: f.RequestID, DeadlineMS: ms, TraceParent: tp}, f)
}

type traceParentKey struct{}

// WithTraceParent makes a Call with the returned context send tp, a W3C
// traceparent ("00-<trace id>-<parent id>-<flags>"), with its request, so
// that the gateway's trace of it joins the caller's (docs/protocol.md
// §12). A gateway older than that closes the connection on it.
func WithTraceParent(ctx context.Context, tp string) context.Context {
	return context.WithValue(ctx, traceParentKey{}, tp)
}

// declaredMS is the deadline_ms a call declares: the whole milliseconds
// left of ctx (at least 1), or 0 for none.
func declaredMS(ctx context.Context, declare bool) int64 {
	d, ok := ctx.Deadline()
	if !declare || !ok {
		return 0
	}
	return max(time.Until(d).Milliseconds(), 1)
}

// RetryError is an error frame that carries retry_after_ms
// (client_rpc.draining, and busy and rate_limited from a gateway with
// session.retry_hints): the call's *codes.Error, which errors.As finds as
// it finds any other, and how long to wait before trying again.
type RetryError struct {
	Err   *codes.Error
	After time.Duration
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("%v (retry after %v)", e.Err, e.After)
}

// Unwrap returns the call's *codes.Error.
func (e *RetryError) Unwrap() error { return e.Err }

// RetryAfter reports the retry hint of a call's error, if it has one.
func RetryAfter(err error) (time.Duration, bool) {
	var r *RetryError
	if errors.As(err, &r) {
		return r.After, true
	}
	return 0, false
}

// answer is a call's result from its answer frame.
func answer(f envelope.Frame, resp any) error {
	if f.Kind == envelope.Error {
		e := &codes.Error{Code: codes.Code(f.Code), Message: f.Message}
		if f.RetryAfterMS > 0 {
			return &RetryError{Err: e, After: time.Duration(f.RetryAfterMS) * time.Millisecond}
		}
		return e
	}
	return decode(f.Body, resp)
}

func encode(v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	case json.RawMessage:
		return v, nil
	}
	return json.Marshal(v)
}

func decode(body []byte, v any) error {
	switch v := v.(type) {
	case nil:
		return nil
	case *[]byte:
		*v = body
		return nil
	}
	if len(body) == 0 {
		return nil
	}
	return json.Unmarshal(body, v)
}

// DecodeBody decodes a response or push body as Call does: into a *[]byte
// as it is, else as JSON (an empty body leaves v alone; nil v ignores the
// body). Generated stubs decode pushes with it.
func DecodeBody(body []byte, v any) error { return decode(body, v) }
