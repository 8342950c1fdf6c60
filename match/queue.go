// Package match is a matchmaking queue's state and its passes
// (docs/rooms.md §9): tickets in arrival order, the compatibility of two
// tickets' props and queries, and the oldest-first greedy grouping. A
// Queue is owned by one goroutine (the queue's actor); nothing here waits,
// talks to a room or pushes to a client.
package match

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/egress"
)

// Ticket is one player waiting in a queue (§4.5).
type Ticket struct {
	ID     string           // <queue>/<16 hex>
	Ref    egress.ClientRef // where the matched push goes
	Props  Props
	Query  Query
	At     time.Time // when the queue took it: its age
	seq    uint64    // the order the queue took it, for ties and returns
	queued bool
}

// Player is the ticket's player.
func (t *Ticket) Player() string { return t.Ref.PlayerID }

// Queue is one queue's waiting tickets, oldest first. It is not safe for
// concurrent use.
type Queue struct {
	cfg      config.Queue
	waiting  []*Ticket
	byID     map[string]*Ticket
	byPlayer map[string]*Ticket
	taken    uint64
}

// New makes an empty queue of cfg.
func New(cfg config.Queue) *Queue {
	return &Queue{cfg: cfg, byID: map[string]*Ticket{}, byPlayer: map[string]*Ticket{}}
}

// Len is the number of waiting tickets (shield_match_tickets).
func (q *Queue) Len() int { return len(q.waiting) }

// Enqueue takes a ticket for ref's player at now: its id, or busy at
// max_tickets and already_queued when the player waits here already.
// Props and query must have been checked (CheckProps, CheckQuery).
func (q *Queue) Enqueue(ref egress.ClientRef, props Props, query Query, now time.Time) (*Ticket, *codes.Error) {
	switch {
	case ref.PlayerID == "":
		return nil, codes.New(codes.Unavailable, "shield.match.enqueue: the client has no player_id")
	case q.byPlayer[ref.PlayerID] != nil:
		return nil, codes.New(codes.AlreadyQueued, "player %q waits in queue %s already", ref.PlayerID, q.cfg.Name)
	case len(q.waiting) >= q.cfg.MaxTickets:
		return nil, codes.New(codes.Busy, "queue %s holds %d tickets (match.queues[].max_tickets)", q.cfg.Name, len(q.waiting))
	}
	q.taken++
	t := &Ticket{ID: fmt.Sprintf("%s/%016x", q.cfg.Name, rand.Uint64()), Ref: ref, Props: props, Query: query,
		At: now, seq: q.taken, queued: true}
	for q.byID[t.ID] != nil { // 2^-64 a pair: cheap to rule out
		t.ID = fmt.Sprintf("%s/%016x", q.cfg.Name, rand.Uint64())
	}
	q.waiting = append(q.waiting, t)
	q.byID[t.ID], q.byPlayer[ref.PlayerID] = t, t
	return t, nil
}

// Cancel ends a waiting ticket: true if it waited (it is in no match, and
// never will be), false if it is unknown or ended already.
func (q *Queue) Cancel(id string) bool {
	t := q.byID[id]
	if t == nil {
		return false
	}
	q.remove(t)
	return true
}

func (q *Queue) remove(t *Ticket) {
	t.queued = false
	delete(q.byID, t.ID)
	if q.byPlayer[t.Player()] == t {
		delete(q.byPlayer, t.Player())
	}
	if i := slices.Index(q.waiting, t); i >= 0 {
		q.waiting = slices.Delete(q.waiting, i, i+1)
	}
}

// Pass is one pass at now (§9.2): it ends the tickets past ticket_ttl
// (expired), then takes each waiting ticket oldest first as an anchor and
// groups it with every younger compatible ticket, in age order, up to
// max_players. A group forms at max_players, or at min_players once its
// anchor waited fill_wait. The tickets of the matches and the expired
// leave the queue.
func (q *Queue) Pass(now time.Time) (matches [][]*Ticket, expired []*Ticket) {
	for _, t := range slices.Clone(q.waiting) {
		if now.Sub(t.At) >= q.cfg.TicketTTL {
			q.remove(t)
			expired = append(expired, t)
		}
	}
	for i := 0; i < len(q.waiting); i++ {
		anchor := q.waiting[i]
		group := []*Ticket{anchor}
		for _, t := range q.waiting[i+1:] {
			if len(group) == q.cfg.MaxPlayers {
				break
			}
			if compatibleAll(group, t) {
				group = append(group, t)
			}
		}
		full := len(group) == q.cfg.MaxPlayers
		if !full && (len(group) < q.cfg.MinPlayers || now.Sub(anchor.At) < q.cfg.FillWait) {
			continue
		}
		for _, t := range group {
			q.remove(t)
		}
		matches = append(matches, group)
		i-- // the anchor's place holds the next ticket now
	}
	return matches, expired
}

// Return puts a match's tickets back with their ages (its room's create
// failed, §9.2): they wait again in their old order.
func (q *Queue) Return(tickets []*Ticket) {
	for _, t := range tickets {
		if t.queued || q.byPlayer[t.Player()] != nil {
			continue // the player enqueued again meanwhile: the new ticket stands
		}
		t.queued = true
		i, _ := slices.BinarySearchFunc(q.waiting, t.seq, func(w *Ticket, seq uint64) int {
			switch {
			case w.seq < seq:
				return -1
			case w.seq > seq:
				return 1
			}
			return 0
		})
		q.waiting = slices.Insert(q.waiting, i, t)
		q.byID[t.ID], q.byPlayer[t.Player()] = t, t
	}
}

func compatibleAll(group []*Ticket, t *Ticket) bool {
	for _, g := range group {
		if !Compatible(g, t) {
			return false
		}
	}
	return true
}

// Compatible reports whether each ticket's props satisfy the other's
// query (§9.2).
func Compatible(a, b *Ticket) bool { return a.Query.Matches(b.Props) && b.Query.Matches(a.Props) }
