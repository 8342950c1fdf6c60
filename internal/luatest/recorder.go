package luatest

import (
	"sync"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
)

// GatewayName is the name the Recorder answers to, and the gateway of the
// refs Client makes.
const GatewayName = "gw-test"

// Recorder is a gateway that records what services send it. A push whose
// body is "panic" and a bind of player "panic" panic, to crash the VM that
// called them from Lua; a response whose body is "crash the actor" panics
// outside any Lua run, in the actor's step. A bind of player "stale" fails with epoch_expired,
// and a kick of session 404 with session_not_found. A bind of player "late" is
// held until the test calls ReleaseLate, as a cluster's bind reply that comes
// after its caller's budget ran out.
type Recorder struct {
	Mu      sync.Mutex // guards everything below; tests hold it to read
	Resp    []*egress.Response
	Pushes  []*egress.Push
	Binds   []*egress.BindRequest
	Kicks   []Kick
	RejectN map[uint64]codes.Code // session_id -> the code Push rejects it with
	late    []func()              // held binds of player "late"
}

var _ egress.Sink = (*Recorder)(nil)

// Kick is one kick a Recorder was asked for.
type Kick struct {
	Ref    egress.ClientRef
	Reason string
}

// NewRecorder returns an empty Recorder that rejects no push.
func NewRecorder() *Recorder {
	return &Recorder{RejectN: map[uint64]codes.Code{}}
}

// Respond records x.
func (r *Recorder) Respond(x *egress.Response) {
	if string(x.Body) == `"crash the actor"` {
		panic("recorder: response asked to panic")
	}
	r.Mu.Lock()
	defer r.Mu.Unlock()
	r.Resp = append(r.Resp, x)
}

// Push records p and answers each target with its RejectN code ("" for
// delivered).
func (r *Recorder) Push(p *egress.Push) []codes.Code {
	if string(p.Bodies["json"]) == `"panic"` {
		panic("recorder: push asked to panic")
	}
	r.Mu.Lock()
	defer r.Mu.Unlock()
	r.Pushes = append(r.Pushes, p)
	out := make([]codes.Code, len(p.Targets))
	for i, ref := range p.Targets {
		out[i] = r.RejectN[ref.SessionID]
	}
	return out
}

// Bind records b and answers with its ref with the player and the next
// epoch, at once.
func (r *Recorder) Bind(b *egress.BindRequest, done egress.BindDone) {
	if b.PlayerID == "panic" {
		panic("recorder: bind asked to panic")
	}
	r.Mu.Lock()
	r.Binds = append(r.Binds, b)
	r.Mu.Unlock()
	if b.PlayerID == "stale" {
		done(egress.ClientRef{}, codes.New(codes.EpochExpired, "epoch %d is stale", b.Ref.Epoch))
		return
	}
	ref := b.Ref
	ref.Epoch++
	ref.PlayerID = b.PlayerID
	if b.PlayerID == "late" {
		r.Mu.Lock()
		r.late = append(r.late, func() { done(ref, nil) })
		r.Mu.Unlock()
		return
	}
	done(ref, nil)
}

// ReleaseLate answers the held binds of player "late" with success and
// returns how many there were.
func (r *Recorder) ReleaseLate() int {
	r.Mu.Lock()
	late := r.late
	r.late = nil
	r.Mu.Unlock()
	for _, done := range late {
		done()
	}
	return len(late)
}

// Kick records a kick of ref.
func (r *Recorder) Kick(ref egress.ClientRef, reason string) *codes.Error {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	if ref.SessionID == 404 {
		return codes.New(codes.SessionNotFound, "no session 404")
	}
	r.Kicks = append(r.Kicks, Kick{ref, reason})
	return nil
}

// Responses returns the responses to request id so far.
func (r *Recorder) Responses(id uint64) []*egress.Response {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	var out []*egress.Response
	for _, x := range r.Resp {
		if x.RequestID == id {
			out = append(out, x)
		}
	}
	return out
}
