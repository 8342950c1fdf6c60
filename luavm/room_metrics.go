package luavm

import (
	"sync/atomic"
	"time"
)

// RoomMetrics counts a room kind's events (docs/rooms.md §13); package
// metrics' RoomKind is one. Every room of a kind shares its kind's; the
// reason and result labels come from §13's closed sets.
type RoomMetrics interface {
	Created(result string)
	Closed(reason string)
	Join(result string)
	Leave(reason string)
	Tick(late, took time.Duration, skipped int)
	TickError(cause string)
	Inputs(n int)
	InputsDropped(reason string, n int)
	StateFrames(frame, n, bytes int) // frame: FrameSnapshot, FrameDelta, FrameEnd
	StateEncoded(frame int)
	StateRejected(reason string, n int)
	Snapshot(cause string)
	// Reservation counts a reserved seat's end: used, expired or
	// unreachable.
	Reservation(outcome string)
}

// The state frame kinds of RoomMetrics.StateFrames.
const (
	FrameSnapshot = iota
	FrameDelta
	FrameEnd
)

// RoomStats is what a room's VM publishes of itself for /admin/rooms and
// the gauges: written on the room's goroutine, read by anyone.
type RoomStats struct {
	Members  atomic.Int64 // suspended included, held seats not
	Reserved atomic.Int64 // seats held for a bind or a reservation
	Tick     atomic.Uint64
}

type noRoomMetrics struct{}

func (noRoomMetrics) Created(string)                         {}
func (noRoomMetrics) Closed(string)                          {}
func (noRoomMetrics) Join(string)                            {}
func (noRoomMetrics) Leave(string)                           {}
func (noRoomMetrics) Tick(time.Duration, time.Duration, int) {}
func (noRoomMetrics) TickError(string)                       {}
func (noRoomMetrics) Inputs(int)                             {}
func (noRoomMetrics) InputsDropped(string, int)              {}
func (noRoomMetrics) StateFrames(int, int, int)              {}
func (noRoomMetrics) StateEncoded(int)                       {}
func (noRoomMetrics) StateRejected(string, int)              {}
func (noRoomMetrics) Snapshot(string)                        {}
func (noRoomMetrics) Reservation(string)                     {}

// publish refreshes the room's RoomStats after a change of membership or
// a tick.
func (r *room) publish() {
	if r.stats == nil {
		return
	}
	var live, held int64
	for _, m := range r.members {
		if m.live {
			live++
		} else {
			held++
		}
	}
	r.stats.Members.Store(live)
	r.stats.Reserved.Store(held + int64(len(r.reservations)))
	r.stats.Tick.Store(r.tick)
}
