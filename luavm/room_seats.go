package luavm

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
)

// Reserved seats (docs/rooms.md §4.2 room:reserve, §9.2, §9.3): a seat
// kept for one player until its token is used or its time is up. A live
// reservation counts against max_members for every join without a token.

// MethodRelease is the internal method a queue calls on a room whose matched push the
// gateway refused: the seat is released at once, "unreachable".
const MethodRelease = "\x00release"

// The bounds of room:reserve's ttl_ms, and its default (§4.2).
const (
	minReserveTTL     = time.Second
	maxReserveTTL     = 5 * time.Minute
	defaultReserveTTL = 15 * time.Second
)

// reservation is one reserved seat.
type reservation struct {
	token    string
	playerID string
	expires  time.Time
	queue    string          // the queue that made it, "" for room:reserve
	props    json.RawMessage // the ticket's props (§8 JSON), nil for room:reserve
}

// SeatRequest is one seat a create asks for (a formed match, §9.2): the
// create's second argument is a JSON array of them.
type SeatRequest struct {
	PlayerID string          `json:"player_id"`
	TTLms    int64           `json:"ttl_ms"`
	Queue    string          `json:"queue,omitempty"`
	Props    json.RawMessage `json:"props,omitempty"`
}

// newToken is a reservation's token: 32 lowercase hex, 128 random bits
// from the runtime's ChaCha8 source, seeded by the OS.
func newToken() string { return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64()) }

// reserve holds a seat for pid until now+ttl and returns its token. A
// reservation the player held already is replaced: only the new token
// is good.
func (r *room) reserve(pid string, ttl time.Duration, queue string, props json.RawMessage, now time.Time) string {
	for tok, s := range r.reservations {
		if s.playerID == pid {
			delete(r.reservations, tok)
		}
	}
	s := &reservation{token: newToken(), playerID: pid, expires: now.Add(ttl), queue: queue, props: props}
	if r.reservations == nil {
		r.reservations = map[string]*reservation{}
	}
	r.reservations[s.token] = s
	r.publish()
	return s.token
}

// seatsTaken is what a join without a token finds taken: members, seats
// held for a bind, and live reservations.
func (r *room) seatsTaken() int { return len(r.members) + len(r.reservations) }

// reserveSeats makes the seats a create asked for (a match's players),
// before room_init runs; it returns their tokens by player_id.
func (vm *VM) reserveSeats(arg []byte) (map[string]string, error) {
	var seats []SeatRequest
	if err := json.Unmarshal(arg, &seats); err != nil {
		return nil, fmt.Errorf("room seats: %v", err)
	}
	r, now := vm.room, time.Now()
	tokens := make(map[string]string, len(seats))
	for _, s := range seats {
		ttl := time.Duration(s.TTLms) * time.Millisecond
		if s.PlayerID == "" || ttl <= 0 {
			return nil, fmt.Errorf("room seats: a seat needs a player_id and a ttl_ms above 0")
		}
		tokens[s.PlayerID] = r.reserve(s.PlayerID, ttl, s.Queue, s.Props, now)
	}
	return tokens, nil
}

// takeSeat spends the token of a join by pid: the reservation, or nil when
// the token is unknown, used, expired or another player's (§4.4
// reservation_invalid). A token is spent by the join that presents it,
// whatever room_join then says.
func (r *room) takeSeat(token, pid string, now time.Time) *reservation {
	s := r.reservations[token]
	if s == nil || s.playerID != pid || !now.Before(s.expires) {
		return nil
	}
	delete(r.reservations, token)
	r.m.Reservation("used")
	return s
}

// seatTable is room_join's seat argument: {token=, queue=, props=}.
func (vm *VM) seatTable(s *reservation) lua.LValue {
	if s == nil {
		return lua.LNil
	}
	t := vm.l.CreateTable(0, 3)
	t.RawSetString("token", lua.LString(s.token))
	if s.queue != "" {
		t.RawSetString("queue", lua.LString(s.queue))
	}
	if len(s.props) > 0 {
		if v, err := DecodeValue(vm.l, s.props); err == nil {
			t.RawSetString("props", v)
		}
	}
	return t
}

// releaseSeat ends a reservation unused: room_seat_released(ctx,
// player_id, reason) runs, reason expired or unreachable.
func (vm *VM) releaseSeat(s *reservation, reason string) {
	r := vm.room
	delete(r.reservations, s.token)
	r.m.Reservation(reason)
	if len(r.members) == 0 && len(r.reservations) == 0 {
		r.idleSince = time.Now() // idle_close counts from the last seat
	}
	r.publish()
	vm.hookTask("room_seat_released", nil, nil, lua.LString(s.playerID), lua.LString(reason))
}

// expireSeats releases the reservations past their time; checked at each
// tick, so a seat lives at most one tick period past its ttl.
func (vm *VM) expireSeats(now time.Time) {
	for _, s := range vm.room.reservations {
		if !now.Before(s.expires) {
			vm.releaseSeat(s, "expired")
		}
	}
}

// releaseCall is the queue's MethodRelease: the seat of the token in args[0]
// (a JSON string), if it is still reserved.
func (vm *VM) releaseCall(args [][]byte) {
	var token string
	if len(args) == 0 || json.Unmarshal(args[0], &token) != nil {
		return
	}
	if s := vm.room.reservations[token]; s != nil {
		vm.releaseSeat(s, "unreachable")
	}
}

// room:reserve(player_id[, ttl_ms]) -> token (§4.2). A full room raises
// client_rpc.room_full, as a join would be refused.
func (vm *VM) roomReserve(L *lua.LState) int {
	r := vm.room
	pid := who(L, 2)
	ttl := defaultReserveTTL
	if v := L.Get(3); v != lua.LNil {
		n, ok := v.(lua.LNumber)
		ms := time.Duration(n) * time.Millisecond
		if !ok || float64(n) != float64(int64(n)) || ms < minReserveTTL || ms > maxReserveTTL {
			L.ArgError(3, "room:reserve: ttl_ms must be an integer from 1000 to 300000")
		}
		ttl = ms
	}
	own := 0
	for _, s := range r.reservations {
		if s.playerID == pid {
			own = 1 // replaced, so its seat is the new one's
		}
	}
	if r.closing != "" {
		vm.raise(L, codes.RoomNotFound, "room %s is closing", r.id)
	}
	if r.seatsTaken()-own >= r.cfg.MaxMembers {
		vm.raise(L, codes.RoomFull, "room %s has no free seat (room.max_members %d)", r.id, r.cfg.MaxMembers)
	}
	L.Push(lua.LString(r.reserve(pid, ttl, "", nil, time.Now())))
	return 1
}
