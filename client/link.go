package client

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
)

// link is one connection of a client. Its read loop owns its goroutine and
// is the only reader of t; writes go through Client.sendOn. gone is closed
// when the read loop has ended, after which err and notice do not change.
type link struct {
	t    transport
	gone chan struct{}
	rx   atomic.Uint64 // frames read, for the heartbeat check

	// Written by the read loop only, before gone closes.
	err         error   // the read error that ended it
	notice      *Notice // the last notice the gateway sent on it
	sessionOver bool    // that notice ended the session: no resume is worth trying

	// resume, set before the read loop starts on a link that resumes, gets
	// the resume's answer (buffered: the read loop never waits on it).
	resume chan ReconnectInfo

	drop error // guarded by Client.mu: why the client dropped it (a dead heartbeat)
}

// endErr is why the link ended: the client's own reason for dropping it,
// else the read error.
func (l *link) endErr() error {
	if l.drop != nil {
		return l.drop
	}
	return l.err
}

// ErrHeartbeatTimeout ends a connection that sent nothing for a whole
// heartbeat interval after a heartbeat (with Options.Reconnect: a network
// that died without a FIN or RST is noticed this way).
var ErrHeartbeatTimeout = errors.New("client: no frame from the gateway for a heartbeat interval after a heartbeat")

// dialLink opens one connection, with a fresh codec.
func (c *Client) dialLink(ctx context.Context) (*link, error) {
	codec, err := envelope.New(c.o.Envelope, envelope.FromServer, c.o.MaxFrameBytes)
	if err != nil {
		return nil, err
	}
	t, err := dialTransport(ctx, c.addr, c.o, codec)
	if err != nil {
		return nil, err
	}
	return &link{t: t, gone: make(chan struct{})}, nil
}

// startLink starts the read loop and the heartbeats of the client's
// current link.
func (c *Client) startLink(l *link) {
	c.wg.Add(1)
	go c.readLoop(l)
	c.startHeartbeats(l)
}

func (c *Client) startHeartbeats(l *link) {
	if c.o.HeartbeatEvery > 0 {
		c.wg.Add(1)
		go c.heartbeats(l, c.o.HeartbeatEvery, c.o.Reconnect != nil)
	}
}

func (c *Client) readLoop(l *link) {
	defer c.wg.Done()
	for {
		f, err := l.t.readFrame()
		if err != nil {
			l.err = err
			close(l.gone)
			c.linkEnded(l)
			return
		}
		l.rx.Add(1)
		c.dispatch(l, f)
	}
}

// linkEnded runs once a link's read loop has ended. A link that was not
// the current one (a resume still waiting for its answer) is the
// reconnect loop's business. The current one's end either starts the
// reconnect loop or ends the client: after Close, after a protocol error
// from the gateway (a reconnect would most likely meet the same bug),
// after a notice that ended the session, or without Options.Reconnect.
func (c *Client) linkEnded(l *link) {
	c.mu.Lock()
	if c.link != l {
		c.mu.Unlock()
		return
	}
	c.link = nil
	var pe *envelope.ProtocolError
	again := c.o.Reconnect != nil && !c.closing && !l.sessionOver && !errors.As(l.err, &pe)
	if !again {
		c.endLocked(l.endErr())
	}
	fn := c.onDisconnect
	info := DisconnectInfo{Err: l.endErr(), Notice: l.notice, Reconnecting: again}
	if again {
		c.wg.Add(1) // before this read loop's own Done: Close's Wait covers the loop
		go c.reconnectLoop(l.endErr())
	}
	c.mu.Unlock()
	if fn != nil && !c.isClosing() {
		fn(info)
	}
}

func (c *Client) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// dispatch hands a frame to whoever waits for it. Handlers run outside
// the lock, so they may call the client's methods.
func (c *Client) dispatch(l *link, f envelope.Frame) {
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
			l.notice = &Notice{Code: f.Code, Message: f.Message, RetryAfterMS: f.RetryAfterMS}
			// A bound session that idles out is suspended, not ended
			// (SPEC §4): with a token, resuming is worth a try.
			l.sessionOver = !(f.Code == string(codes.SessionIdleTimeout) && c.token != "")
			fn := c.notice
			c.mu.Unlock()
			if fn != nil {
				fn(f.Code, f.Message)
			}
			return
		}
		switch codes.Code(f.Code) {
		case codes.SessionResumeToken, codes.SessionResumed:
			if f.Token != "" {
				c.token = f.Token
			}
		case codes.SessionResumeFailed:
			c.token = ""
		}
		c.resumeAnsweredLocked(l, f)
		fn := c.status
		c.mu.Unlock()
		if fn != nil {
			fn(Status{Code: f.Code, Message: f.Message, Token: f.Token, GraceMS: f.GraceMS, RetryAfterMS: f.RetryAfterMS})
		}
	default: // heartbeat echoes need nothing
		c.mu.Unlock()
	}
}

// resumeAnsweredLocked makes a resuming link current on the resume's
// answer, before the read loop reads the frames queued behind it, so that
// calls may go out at once; the reconnect loop, waiting on l.resume,
// then tells the app.
func (c *Client) resumeAnsweredLocked(l *link, f envelope.Frame) {
	if l.resume == nil {
		return
	}
	var info ReconnectInfo
	switch codes.Code(f.Code) {
	case codes.SessionResumed:
		info = ReconnectInfo{Resumed: true}
	case codes.SessionResumeFailed:
		info = ReconnectInfo{Message: f.Message}
	default:
		return
	}
	ch := l.resume
	l.resume = nil
	if !c.closing && c.err == nil {
		c.link = l
	}
	ch <- info // buffered, and sent once
}

// heartbeats sends one every interval while l is the client's. With
// detect, a link that read nothing in the interval after a heartbeat is
// dropped (ErrHeartbeatTimeout): the gateway echoes every heartbeat.
func (c *Client) heartbeats(l *link, every time.Duration, detect bool) {
	defer c.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	beatAt := ^uint64(0) // l.rx when the last heartbeat went out
	for {
		select {
		case <-t.C:
			if detect && l.rx.Load() == beatAt {
				c.mu.Lock()
				if l.drop == nil {
					l.drop = ErrHeartbeatTimeout
				}
				c.mu.Unlock()
				l.t.close() // the read loop ends, and with it the link
				return
			}
			beatAt = l.rx.Load()
			if c.sendOn(context.Background(), l, &envelope.Frame{Kind: envelope.Heartbeat}) != nil {
				return
			}
		case <-l.gone:
			return
		case <-c.quit:
			return
		}
	}
}
