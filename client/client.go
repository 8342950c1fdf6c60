// Package client is a Go client for Shield gateways, for game clients,
// bots, load tools and tests. It speaks every envelope of SPEC §3 over
// TCP or WebSocket, either of them over TLS, pairs requests with their
// answers, dispatches pushes and notices, and sends heartbeats.
//
// A Client is safe for concurrent use: any number of goroutines may Call
// at once; their requests are pipelined on the one connection.
package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
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
}

// ErrClosed is returned by calls on a closed client, or one whose
// connection ended; Err tells why it ended.
var ErrClosed = errors.New("client: connection closed")

// Client is one connection to a gateway.
type Client struct {
	t transport

	wmu sync.Mutex // serialises writes to t

	mu      sync.Mutex // guards pending, pushes, anyPush, notice, status, token, err
	pending map[uint64]chan envelope.Frame
	pushes  map[uint32]func(body []byte)
	anyPush func(route uint32, body []byte)
	notice  func(code, message string)
	status  func(Status)
	token   string
	err     error

	nextID atomic.Uint64
	maxID  uint64
	done   chan struct{} // closed when the read loop ends
	quit   chan struct{} // closed by Close
	once   sync.Once
	wg     sync.WaitGroup
}

// Dial connects to addr (host:port) and starts the client's goroutines.
// ctx bounds the dial and the TLS and WebSocket handshakes only.
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
	codec, err := envelope.New(o.Envelope, envelope.FromServer, o.MaxFrameBytes)
	if err != nil {
		return nil, err
	}
	t, err := dialTransport(ctx, addr, o, codec)
	if err != nil {
		return nil, err
	}
	c := &Client{t: t, pending: map[uint64]chan envelope.Frame{}, pushes: map[uint32]func([]byte){},
		done: make(chan struct{}), quit: make(chan struct{}), maxID: 1<<64 - 1}
	if o.Envelope == envelope.NameIdlen {
		c.maxID = envelope.MaxIdlenRequestID
	}
	if o.Resume != "" {
		if err := c.send(ctx, &envelope.Frame{Kind: envelope.Heartbeat, Token: o.Resume}); err != nil {
			c.t.close()
			return nil, err
		}
	}
	c.wg.Add(1)
	go c.readLoop()
	if o.HeartbeatEvery > 0 {
		c.wg.Add(1)
		go c.heartbeats(o.HeartbeatEvery)
	}
	return c, nil
}

// Close closes the connection and waits for the client's goroutines.
func (c *Client) Close() error {
	c.once.Do(func() {
		close(c.quit)
		c.t.close()
	})
	c.wg.Wait()
	return nil
}

// Done is closed when the connection has ended, by Close or by the gateway.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended: nil while it is open, ErrClosed after
// Close, or the read error (io.EOF when the gateway closed it).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// LocalAddr is the client's end of the connection.
func (c *Client) LocalAddr() net.Addr { return c.t.localAddr() }

// OnPush sets the handler of pushes on route (nil removes it). Handlers run
// on the read loop: keep them short.
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
// connection may resume the session (Options.Resume).
func (c *Client) ResumeToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// Call sends a request on route and waits for its one answer; ctx bounds
// the write as well as the wait. req is
// encoded as JSON unless it is a []byte (sent as is) or nil (empty body);
// resp, if not nil, is decoded from the response body as JSON, or set as
// is when it is a *[]byte. An error frame comes back as a *codes.Error
// whose Code is the gateway's code.
func (c *Client) Call(ctx context.Context, route uint32, req, resp any) error {
	body, err := encode(req)
	if err != nil {
		return err
	}
	id := c.newID()
	ch := make(chan envelope.Frame, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return ErrClosed
	}
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.send(ctx, &envelope.Frame{Kind: envelope.Request, RouteID: route, RequestID: id, Body: body}); err != nil {
		return err
	}
	select {
	case f := <-ch:
		if f.Kind == envelope.Error {
			return &codes.Error{Code: codes.Code(f.Code), Message: f.Message}
		}
		return decode(f.Body, resp)
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Notify sends a notify on route: no answer ever comes.
func (c *Client) Notify(route uint32, req any) error {
	body, err := encode(req)
	if err != nil {
		return err
	}
	return c.send(context.Background(), &envelope.Frame{Kind: envelope.Notify, RouteID: route, Body: body})
}

// Heartbeat sends one heartbeat; the gateway echoes it.
func (c *Client) Heartbeat() error {
	return c.send(context.Background(), &envelope.Frame{Kind: envelope.Heartbeat})
}

// WriteRaw writes bytes to the connection as they are (over ws, as one
// message of the envelope's type): for tests that send what no
// well-behaved client would.
func (c *Client) WriteRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.t.writeRaw(context.Background(), b)
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

// send writes one frame by ctx's deadline (at most writeTimeout).
func (c *Client) send(ctx context.Context, f *envelope.Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.t.writeFrame(ctx, f)
}

func (c *Client) readLoop() {
	defer c.wg.Done()
	for {
		f, err := c.t.readFrame()
		if err != nil {
			c.mu.Lock()
			select {
			case <-c.quit:
				c.err = ErrClosed
			default:
				c.err = err
			}
			c.mu.Unlock()
			close(c.done)
			return
		}
		c.dispatch(f)
	}
}

// dispatch hands a frame to whoever waits for it. Handlers run outside
// the lock, so they may call the client's methods.
func (c *Client) dispatch(f envelope.Frame) {
	c.mu.Lock()
	switch f.Kind {
	case envelope.Response, envelope.Error:
		if ch, ok := c.pending[f.RequestID]; ok {
			delete(c.pending, f.RequestID)
			ch <- f // buffered: never blocks
		}
		c.mu.Unlock()
	case envelope.Push:
		fn, any := c.pushes[f.RouteID], c.anyPush
		c.mu.Unlock()
		if fn != nil {
			fn(f.Body)
		} else if any != nil {
			any(f.RouteID, f.Body)
		}
	case envelope.Notice:
		if codes.IsNotice(codes.Code(f.Code)) {
			fn := c.notice
			c.mu.Unlock()
			if fn != nil {
				fn(f.Code, f.Message)
			}
			return
		}
		if f.Token != "" {
			c.token = f.Token
		}
		fn := c.status
		c.mu.Unlock()
		if fn != nil {
			fn(Status{Code: f.Code, Message: f.Message, Token: f.Token, GraceMS: f.GraceMS})
		}
	default: // heartbeat echoes need nothing
		c.mu.Unlock()
	}
}

func (c *Client) heartbeats(every time.Duration) {
	defer c.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if c.Heartbeat() != nil {
				return
			}
		case <-c.done:
			return
		case <-c.quit:
			return
		}
	}
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
