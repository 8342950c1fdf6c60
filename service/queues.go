package service

import (
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/match"
)

// Queue is one matchmaking queue this node hosts (docs/rooms.md §9.1).
type Queue struct {
	Config  config.Queue
	Metrics QueueMetrics // nil: nothing is counted
}

// QueueMetrics counts a queue's events (docs/rooms.md §13); package
// metrics' Queue is one. Its methods are called on the queue's goroutine.
type QueueMetrics interface {
	Waiting(n int)          // shield_match_tickets
	Ended(outcome string)   // a ticket: matched, cancelled, expired, unreachable
	Waited(d time.Duration) // enqueue to matched
	Formed(result string)   // a match: ok, create_failed
	Full()                  // an enqueue refused at max_tickets
}

type noQueueMetrics struct{}

func (noQueueMetrics) Waiting(int)          {}
func (noQueueMetrics) Ended(string)         {}
func (noQueueMetrics) Waited(time.Duration) {}
func (noQueueMetrics) Formed(string)        {}
func (noQueueMetrics) Full()                {}

// createBudget bounds a match's room create (room_init included).
const createBudget = 10 * time.Second

// maxQueueInbox caps a queue's inbox: its enqueues and cancels beyond it
// answer busy at once; max_tickets bounds it below that.
const maxQueueInbox = 1024

// queueActor is one queue (§9): a goroutine that owns the queue's tickets
// (match.Queue), takes enqueues and cancels from its inbox, runs a pass
// every interval, creates a room for each match formed, and pushes each
// of its players the matched event (§9.3) or, for a ticket past
// ticket_ttl, expired. It is stopped by the runtime's halt.
type queueActor struct {
	rt    *Runtime
	cfg   config.Queue
	id    egress.ActorID // the From of its creates: their results come back here
	q     *match.Queue
	m     QueueMetrics
	inbox chan *luavm.Call
	// results are the creates' answers: never dropped, as they are
	// bounded by the creates in flight, one per match formed.
	mu      sync.Mutex
	results []*luavm.Result
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	creates map[uint64][]*match.Ticket // matches whose room is being made, by call id
	next    uint64
}

// QueueService is the Service of a match queue's ActorID: no actor has a
// name starting with '@' (names are identifiers).
const QueueService = "@match"

// QueueActor is match queue name's ActorID: what its creates come from,
// and, in a cluster, what its node announces and its subject is made of.
func QueueActor(name string) egress.ActorID { return egress.ActorID{Service: QueueService, Room: name} }

func newQueueActor(rt *Runtime, spec Queue) *queueActor {
	m := spec.Metrics
	if m == nil {
		m = noQueueMetrics{}
	}
	return &queueActor{rt: rt, cfg: spec.Config, id: QueueActor(spec.Config.Name), q: match.New(spec.Config), m: m,
		inbox: make(chan *luavm.Call, min(spec.Config.MaxTickets, maxQueueInbox)), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), creates: map[uint64][]*match.Ticket{}}
}

// routeQueue hands shield.match.enqueue's or cancel's call to its queue.
func (rt *Runtime) routeQueue(c *luavm.Call) *codes.Error {
	qa := rt.queues[c.To.Queue]
	switch {
	case qa == nil && rt.remote != nil && c.Reply == "":
		return rt.remote.Route(QueueActor(c.To.Queue), c) // hosted by another node (§9.1)
	case qa == nil:
		return codes.New(codes.Unavailable, "no match queue %q on node %s", c.To.Queue, rt.opts.Node)
	case rt.stopping.Load() && c.Method == luavm.MethodEnqueue:
		return codes.New(codes.Unavailable, "node %s is stopping: queue %s takes no tickets", rt.opts.Node, c.To.Queue)
	}
	select {
	case qa.inbox <- c:
		return nil
	default:
		return codes.New(codes.Busy, "queue %s has %d requests waiting", c.To.Queue, cap(qa.inbox))
	}
}

// returnQueue hands a create's result to the queue that made it.
func (rt *Runtime) returnQueue(r *luavm.Result) bool {
	if r.To.Service != QueueService || r.Reply != "" {
		return false
	}
	if qa := rt.queues[r.To.Room]; qa != nil {
		qa.mu.Lock()
		qa.results = append(qa.results, r)
		qa.mu.Unlock()
		select {
		case qa.wake <- struct{}{}:
		default:
		}
	}
	return true
}

func (qa *queueActor) loop() {
	defer close(qa.done)
	t := time.NewTicker(qa.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-qa.stop:
			return
		case c := <-qa.inbox:
			qa.serve(c)
		case <-qa.wake:
			qa.mu.Lock()
			rs := qa.results
			qa.results = nil
			qa.mu.Unlock()
			for _, r := range rs {
				qa.created(r)
			}
		case now := <-t.C:
			qa.pass(now)
		}
	}
}

// serve answers an enqueue or a cancel.
func (qa *queueActor) serve(c *luavm.Call) {
	var vals [][]byte
	var err *codes.Error
	switch c.Method {
	case luavm.MethodEnqueue:
		var id string
		if id, err = qa.enqueue(c.Args); err == nil {
			b, _ := json.Marshal(id)
			vals = [][]byte{b}
		}
	case luavm.MethodCancel:
		var id string
		ok := len(c.Args) == 1 && json.Unmarshal(c.Args[0], &id) == nil && qa.q.Cancel(id)
		if ok {
			qa.m.Ended("cancelled")
			qa.m.Waiting(qa.q.Len())
		}
		b, _ := json.Marshal(ok)
		vals = [][]byte{b}
	default:
		err = codes.New(codes.HandlerMissing, "a match queue has no method %q", c.Method)
	}
	if c.ID != 0 {
		qa.rt.Return(&luavm.Result{To: c.From, ID: c.ID, Gen: c.Gen, Reply: c.Reply, Values: vals, Err: err})
	}
}

// enqueue reads an enqueue's arguments (checked again: they may come from
// another node) and takes the ticket.
func (qa *queueActor) enqueue(args [][]byte) (string, *codes.Error) {
	bad := func(err error) (string, *codes.Error) {
		return "", codes.New(codes.Unavailable, "shield.match.enqueue: %v", err)
	}
	if len(args) != 3 {
		return bad(errMalformed)
	}
	ref, ok := luavm.RefOfJSON(args[0])
	if !ok {
		return bad(errMalformed)
	}
	props, query := match.Props{}, match.Query{}
	if err := json.Unmarshal(args[1], &props); err != nil {
		return bad(err)
	}
	if err := json.Unmarshal(args[2], &query); err != nil {
		return bad(err)
	}
	if err := match.CheckProps(props); err != nil {
		return bad(err)
	}
	if err := match.CheckQuery(query); err != nil {
		return bad(err)
	}
	t, err := qa.q.Enqueue(ref, props, query, time.Now())
	if err != nil {
		if err.Code == codes.Busy {
			qa.m.Full()
		}
		return "", err
	}
	qa.m.Waiting(qa.q.Len())
	return t.ID, nil
}

// pass forms what matches it can and ends the expired tickets (§9.2).
func (qa *queueActor) pass(now time.Time) {
	if qa.q.Len() == 0 {
		return
	}
	matches, expired := qa.q.Pass(now)
	for _, t := range expired {
		qa.m.Ended("expired")
		b, _ := json.Marshal(map[string]string{"event": "expired", "ticket": t.ID})
		qa.push(t.Ref, b)
	}
	for _, group := range matches {
		qa.create(group, now)
	}
	qa.m.Waiting(qa.q.Len())
}

// create asks for a room of the queue's kind with a seat reserved for each
// player; its result comes back through returnQueue.
func (qa *queueActor) create(group []*match.Ticket, now time.Time) {
	type player struct {
		PlayerID string      `json:"player_id"`
		Props    match.Props `json:"props"`
	}
	players := make([]player, len(group))
	seats := make([]luavm.SeatRequest, len(group))
	for i, t := range group {
		players[i] = player{PlayerID: t.Player(), Props: t.Props}
		pb, _ := json.Marshal(t.Props)
		seats[i] = luavm.SeatRequest{PlayerID: t.Player(), TTLms: qa.cfg.ReservationTTL.Milliseconds(), Queue: qa.cfg.Name, Props: pb}
	}
	params, _ := json.Marshal(map[string]any{"queue": qa.cfg.Name, "players": players})
	sb, _ := json.Marshal(seats)
	qa.next++
	c := &luavm.Call{From: qa.id, To: luavm.Address{Service: qa.cfg.Room, Room: luavm.CreateRoom}, ID: qa.next,
		Method: "room_init", Args: [][]byte{params, sb}, Deadline: now.Add(createBudget)}
	qa.creates[c.ID] = group
	if err := qa.rt.Route(c); err != nil {
		qa.created(&luavm.Result{To: qa.id, ID: c.ID, Err: err})
	}
}

// created is a create's answer: the players are told their room and
// token, or their tickets go back with their ages.
func (qa *queueActor) created(r *luavm.Result) {
	group := qa.creates[r.ID]
	if group == nil {
		return
	}
	delete(qa.creates, r.ID)
	var room string
	tokens := map[string]string{}
	if r.Err == nil && (len(r.Values) < 2 || json.Unmarshal(r.Values[0], &room) != nil || json.Unmarshal(r.Values[1], &tokens) != nil) {
		r.Err = codes.New(codes.Unavailable, "a malformed create answer")
	}
	if r.Err != nil {
		qa.rt.log.Warn("match: the room of a match could not be made; its tickets wait again",
			"queue", qa.cfg.Name, "room", qa.cfg.Room, "code", r.Err.Code, "error", r.Err.Message)
		qa.m.Formed("create_failed")
		qa.q.Return(group)
		qa.m.Waiting(qa.q.Len())
		return
	}
	qa.m.Formed("ok")
	names := make([]string, len(group))
	for i, t := range group {
		names[i] = t.Player()
	}
	now := time.Now()
	for _, t := range group {
		b, _ := json.Marshal(map[string]any{"event": "matched", "ticket": t.ID, "room": room, "token": tokens[t.Player()],
			"expires_ms": qa.cfg.ReservationTTL.Milliseconds(), "players": names})
		if qa.push(t.Ref, b) {
			qa.m.Ended("matched")
			qa.m.Waited(now.Sub(t.At))
			continue
		}
		// The gateway refused it (the session closed, rebound or full):
		// the seat is free at once (§9.2).
		qa.m.Ended("unreachable")
		tb, _ := json.Marshal(tokens[t.Player()])
		_ = qa.rt.Route(&luavm.Call{From: qa.id, To: luavm.Address{Room: room}, Method: luavm.MethodRelease, Args: [][]byte{tb}})
	}
}

// push sends a shield.match event (§9.3) to ref: JSON under every body
// codec, as the reserved routes' bodies are. It reports whether the
// gateway took it.
func (qa *queueActor) push(ref egress.ClientRef, body []byte) bool {
	sink := qa.rt.Sink()
	if sink == nil {
		return false
	}
	refused := sink.Push(&egress.Push{RouteID: descriptor.RouteMatch, Bodies: egress.SameBody(qa.rt.pushCodecs(qa.cfg.Room), body),
		Targets: []egress.ClientRef{ref}})
	return len(refused) == 1 && refused[0] == ""
}

var errMalformed = errors.New("a malformed enqueue")

// pushCodecs are the body codec keys a push to a session of room kind
// kind is written under.
func (rt *Runtime) pushCodecs(kind string) []string {
	rt.rooms.mu.RLock()
	defer rt.rooms.mu.RUnlock()
	if k := rt.rooms.kinds[kind]; k != nil && len(k.spec.PushCodecs) > 0 {
		return k.spec.PushCodecs
	}
	return []string{codec.JSONName}
}

// startQueues runs the queues' goroutines; stopQueues ends them.
func (rt *Runtime) startQueues() {
	for _, qa := range rt.queues {
		go qa.loop()
	}
}

func (rt *Runtime) stopQueues() {
	if rt.watchStop == nil {
		return // never started
	}
	for _, qa := range rt.queues {
		close(qa.stop)
		<-qa.done
	}
}
