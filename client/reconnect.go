package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shieldrpc/shield/envelope"
)

// Reconnect is the policy of a client that survives dropped connections
// (SPEC §4 Resume), as the TypeScript client's reconnect option:
//
//  1. the calls pending on the dropped connection return a
//     *DisconnectedError (never sent again) and OnDisconnect runs;
//  2. the client dials again after Base, doubled each failed attempt up
//     to Max, a random part Jitter taken off each delay;
//  3. with a resume token (the gateway sends one after each login when
//     session.resume_window > 0), the new connection's first frame is the
//     resume, and the attempt succeeds with its answer, which says
//     whether the session survived; without a token, an attempt succeeds
//     once the connection is open;
//  4. OnReconnect runs with Resumed true (still logged in; the pushes
//     queued meanwhile arrive in order) or false (a new session: log in
//     again).
//
// The client does not reconnect after Close, after a malformed frame from
// the gateway, or after a notice that ends the session (session.kicked,
// gateway.draining, ...; session.idle_timeout only without a token).
// Zero fields take the defaults.
type Reconnect struct {
	Base     time.Duration // the first delay; default 250ms
	Max      time.Duration // the longest delay; default 10s
	Attempts int           // tries after one drop before giving up; default 10; negative: no limit
	// Jitter is the part of each delay (0..1) taken off at random: with
	// 0.5 (the default) a delay d waits between d/2 and d. Negative: none.
	Jitter float64
	// ConnectTimeout bounds each attempt: the dial, the handshakes, and
	// the wait for the resume's answer; default 10s.
	ConnectTimeout time.Duration
}

func (r Reconnect) withDefaults() Reconnect {
	if r.Base <= 0 {
		r.Base = 250 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 10 * time.Second
	}
	if r.Max < r.Base {
		r.Max = r.Base
	}
	if r.Attempts == 0 {
		r.Attempts = 10
	}
	switch {
	case r.Jitter == 0:
		r.Jitter = 0.5
	case r.Jitter < 0:
		r.Jitter = 0
	case r.Jitter > 1:
		r.Jitter = 1
	}
	if r.ConnectTimeout <= 0 {
		r.ConnectTimeout = 10 * time.Second
	}
	return r
}

// Delay is the wait before reconnect attempt n (from 1) with the random
// draw u in [0, 1): Base·2^(n-1), at most Max, less Jitter·u of it.
func (r Reconnect) Delay(n int, u float64) time.Duration {
	r = r.withDefaults()
	d := r.Max
	if n < 1 {
		n = 1
	}
	if n-1 < 40 {
		if exp := r.Base << (n - 1); exp > 0 && exp < r.Max {
			d = exp
		}
	}
	return time.Duration(float64(d) * (1 - r.Jitter*u))
}

// DisconnectInfo tells OnDisconnect about a dropped connection.
type DisconnectInfo struct {
	Err          error   // why it ended: io.EOF, a read error, ErrHeartbeatTimeout, ...
	Notice       *Notice // the notice the gateway sent first, if any
	Reconnecting bool    // the client will try to reconnect; false: it has ended (Done)
}

// ReconnectInfo tells OnReconnect how a reconnect went.
type ReconnectInfo struct {
	// Resumed is true when the gateway resumed the session
	// (session.resumed): the player is still logged in, still in its
	// room, and the pushes queued meanwhile follow in order. False: a new
	// session (session.resume_failed, or no token was held): log in again.
	Resumed bool
	Attempt int    // the attempt that succeeded, from 1
	Message string // the gateway's reason, with session.resume_failed
}

// GaveUpError is Err of a client whose reconnect attempts all failed.
type GaveUpError struct {
	Attempts int
	Last     error // the last attempt's error
}

func (e *GaveUpError) Error() string {
	return fmt.Sprintf("client: gave up reconnecting after %d attempts: %v", e.Attempts, e.Last)
}

// Unwrap returns the last attempt's error.
func (e *GaveUpError) Unwrap() error { return e.Last }

// Is makes a GaveUpError match ErrClosed: the client has ended.
func (e *GaveUpError) Is(target error) bool { return target == ErrClosed }

// OnDisconnect sets the handler run when the open connection ends (its
// pending calls have returned by then, or are returning). It runs on the
// ended connection's read loop.
func (c *Client) OnDisconnect(fn func(DisconnectInfo)) {
	c.mu.Lock()
	c.onDisconnect = fn
	c.mu.Unlock()
}

// OnReconnect sets the handler run after a reconnect: info.Resumed says
// whether the session survived or the app must log in again. It runs on
// the reconnect loop's goroutine, so it may Call (log in again, rejoin a
// room). Pushes queued for a resumed session may reach their handlers
// before it runs.
func (c *Client) OnReconnect(fn func(ReconnectInfo)) {
	c.mu.Lock()
	c.onReconnect = fn
	c.mu.Unlock()
}

// reconnectLoop dials until a connection is back (resumed or new), the
// client is closed, or the attempts run out.
func (c *Client) reconnectLoop(last error) {
	defer c.wg.Done()
	r := *c.o.Reconnect
	for n := 1; r.Attempts < 0 || n <= r.Attempts; n++ {
		wait := time.NewTimer(r.Delay(n, rand.Float64()))
		select {
		case <-wait.C:
		case <-c.quit:
			wait.Stop()
			return
		}
		info, err := c.attempt(r.ConnectTimeout)
		if err == nil {
			info.Attempt = n
			c.mu.Lock()
			fn, room := c.onReconnect, c.room
			c.mu.Unlock()
			switch {
			case room != nil && !info.Resumed:
				room.sessionLost() // a new session is in no room
			case room != nil && room.In():
				_ = room.Sync() // docs/rooms.md §8.3 step 2: once after session.resumed
			}
			if fn != nil {
				fn(info)
			}
			return
		}
		if err == ErrClosed {
			return
		}
		last = err
	}
	c.mu.Lock()
	c.endLocked(&GaveUpError{Attempts: r.Attempts, Last: last})
	c.mu.Unlock()
}

// attempt makes one connection current: dialled, and with a token,
// resumed or refused by the gateway (either way the session is open).
func (c *Client) attempt(timeout time.Duration) (ReconnectInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l, err := c.dialLink(ctx)
	if err != nil {
		return ReconnectInfo{}, err
	}
	c.mu.Lock()
	if c.closing || c.err != nil {
		c.mu.Unlock()
		l.t.close()
		return ReconnectInfo{}, ErrClosed
	}
	token := c.token
	if token == "" {
		// Nothing to resume: the connection is a new session at once.
		c.link = l
		c.wg.Add(1)
		go c.readLoop(l)
		c.startHeartbeats(l)
		c.mu.Unlock()
		return ReconnectInfo{}, nil
	}
	// The resume is the connection's first frame (SPEC §4); nothing else
	// goes out until its answer, which makes the link current.
	answer := make(chan ReconnectInfo, 1)
	l.resume = answer
	c.wg.Add(1)
	go c.readLoop(l)
	c.mu.Unlock()
	if err := c.sendOn(ctx, l, &envelope.Frame{Kind: envelope.Heartbeat, Token: token}); err != nil {
		l.t.close()
		<-l.gone
		return ReconnectInfo{}, err
	}
	var info ReconnectInfo
	var failed error
	select {
	case info = <-answer:
	case <-l.gone:
		failed = fmt.Errorf("client: the connection ended before the resume's answer: %w", l.err)
	case <-ctx.Done():
		failed = fmt.Errorf("client: no answer to the resume within %v", timeout)
	case <-c.quit:
		failed = ErrClosed
	}
	if failed != nil {
		select {
		case info = <-answer: // it came all the same: the link may be current
			failed = nil
		default:
			l.t.close()
			<-l.gone
			return ReconnectInfo{}, failed
		}
	}
	c.mu.Lock()
	current := c.link == l
	c.mu.Unlock()
	if !current {
		// Closed meanwhile, or the link ended right after its answer, and
		// then its read loop started another reconnect loop: this one stops.
		l.t.close()
		return ReconnectInfo{}, ErrClosed
	}
	c.startHeartbeats(l)
	return info, nil
}
