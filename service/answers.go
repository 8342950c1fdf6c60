package service

import (
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
)

// An actor hands its VM's answers to the gateway a step's worth at a time:
// the answers to the frames of one read, and to every session the step
// served, reach the gateway together (egress.BatchSink), which writes each
// session's in one write instead of one write per answer. The buffer is
// handed over whenever the loop has nothing left to do at once (before it
// waits: an answer never waits for a message that has not arrived), after
// answerBatch answers, and before anything else the VM sends (a push, a
// bind, a kick), so that the client sees the VM's answers and pushes in the
// order the VM made them.

// answerBatch is how many answers an actor holds before it hands them over
// even though more messages wait: enough to fill a write for several
// requests of each of a few sessions, few enough that the first answer is
// not held long behind the others.
const answerBatch = 16

// answerSink is the Sink an actor's VM sends through. Only the actor's
// goroutine uses it.
type answerSink struct{ a *actor }

var _ egress.ValueSink = (*answerSink)(nil)

// Respond holds the answer for the step's hand-over.
func (s *answerSink) Respond(r *egress.Response) { s.a.answers = append(s.a.answers, *r) }

// RespondValue holds the answer for the step's hand-over: the VM's answer
// is built on its stack and copied here, not allocated.
func (s *answerSink) RespondValue(r egress.Response) { s.a.answers = append(s.a.answers, r) }

// Push hands the answers over first, then the push.
func (s *answerSink) Push(p *egress.Push) []codes.Code {
	s.a.flushAnswers()
	return s.a.sink().Push(p)
}

// Bind hands the answers over first, then the bind.
func (s *answerSink) Bind(b *egress.BindRequest, done egress.BindDone) {
	s.a.flushAnswers()
	s.a.sink().Bind(b, done)
}

// Kick hands the answers over first, then the kick.
func (s *answerSink) Kick(ref egress.ClientRef, reason string) *codes.Error {
	s.a.flushAnswers()
	return s.a.sink().Kick(ref, reason)
}

// sink is the runtime's Sink, which the caller knows is set.
func (a *actor) sink() egress.Sink { return a.rt.Sink() }

// flushAnswers hands the held answers to the runtime's Sink, at once when
// it takes them so.
func (a *actor) flushAnswers() {
	if len(a.answers) == 0 {
		return
	}
	defer func() { // even when the Sink panics: no answer goes twice
		clear(a.answers)
		a.answers = a.answers[:0]
	}()
	switch sink := a.rt.Sink().(type) {
	case nil:
	case egress.BatchSink:
		// The gateway keeps nothing of rs once RespondAll returns: the
		// answers can stay in the buffer.
		ptrs := a.answerPtrs[:0]
		for i := range a.answers {
			ptrs = append(ptrs, &a.answers[i])
		}
		sink.RespondAll(ptrs)
		clear(ptrs)
		a.answerPtrs = ptrs[:0]
	default:
		for _, r := range a.answers {
			sink.Respond(&r) // a copy of its own: this Sink may keep it
		}
	}
}
