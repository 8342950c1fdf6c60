package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// roomVecs are the room metrics of docs/rooms.md §13, registered on the
// first Room call: a node without room kinds exports none of them.
type roomVecs struct {
	created, closed, joins, leaves   *prometheus.CounterVec
	ticks, skipped, tickErrors       *prometheus.CounterVec
	lateness, tickSeconds            *prometheus.HistogramVec
	inputs, inputsDropped            *prometheus.CounterVec
	frames, bytes, encodes, rejected *prometheus.CounterVec
	snapshots, reservations          *prometheus.CounterVec
}

// roomBuckets are §13's: a tick's lateness and its run, in seconds.
var roomBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1}

func newRoomVecs(r *prometheus.Registry) *roomVecs {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"kind"}, labels...))
		r.MustRegister(c)
		return c
	}
	hist := func(name, help string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: roomBuckets}, []string{"kind"})
		r.MustRegister(h)
		return h
	}
	return &roomVecs{
		created:     counter("shield_rooms_created_total", "Room creates, by kind and result (ok, failed, refused).", "result"),
		closed:      counter("shield_rooms_closed_total", "Rooms closed, by kind and reason (requested, idle, error, shutdown).", "reason"),
		joins:       counter("shield_room_joins_total", "Joins, by kind and result (ok, refused, full, reservation_invalid, failed).", "result"),
		leaves:      counter("shield_room_leaves_total", "Leaves, by kind and reason (docs/rooms.md §5.2).", "reason"),
		ticks:       counter("shield_room_ticks_total", "Ticks run, by kind."),
		skipped:     counter("shield_room_ticks_skipped_total", "Tick grid times skipped because a tick came late, by kind."),
		tickErrors:  counter("shield_room_tick_errors_total", "Failed ticks, by kind and cause (raised, budget, heap, state).", "cause"),
		lateness:    hist("shield_room_tick_lateness_seconds", "A tick's start minus its scheduled time, by kind."),
		tickSeconds: hist("shield_room_tick_seconds", "A tick's run: room_tick, the state walk and the encodes, by kind."),
		inputs:      counter("shield_room_inputs_total", "Inputs handed to room_tick, by kind."),
		inputsDropped: counter("shield_room_inputs_dropped_total",
			"Inputs dropped, by kind and reason (queue_full, stale, not_member, decode_failed, schema_violation, left).", "reason"),
		frames:   counter("shield_room_state_frames_total", "State frames the egress accepted, per member, by kind and frame (snapshot, delta, end).", "frame"),
		bytes:    counter("shield_room_state_bytes_total", "The body bytes of the accepted state frames, by kind and frame.", "frame"),
		encodes:  counter("shield_room_state_encodes_total", "State bodies encoded (one per view and base), by kind and frame.", "frame"),
		rejected: counter("shield_room_state_rejected_total", "State frames the egress refused, by kind and reason.", "reason"),
		snapshots: counter("shield_room_snapshots_total",
			"Snapshots sent, by kind and cause (join, view, behind, sync).", "cause"),
		reservations: counter("shield_room_reservations_total",
			"Reserved seats ended, by kind and outcome (used, expired, unreachable).", "outcome"),
	}
}

// RoomKind counts one room kind's events (docs/rooms.md §13); it is the
// luavm.RoomMetrics of that kind's rooms. The per-tick counters are bound
// to their labels once, so a tick looks nothing up.
type RoomKind struct {
	v                      *roomVecs
	limits                 *prometheus.CounterVec // shield_limits_hit_total
	kind                   string
	ticks, skipped, inputs prometheus.Counter
	lateness, took         prometheus.Observer
	frames, bytes, encodes [3]prometheus.Counter // snapshot, delta, end
}

// Room returns the metrics of room kind kind, registering the room
// metrics on the first call.
func (m *Metrics) Room(kind string) *RoomKind {
	m.roomOnce.Do(func() { m.rooms = newRoomVecs(m.Registry) })
	v := m.rooms
	k := &RoomKind{v: v, limits: m.LimitsHit, kind: kind, ticks: v.ticks.WithLabelValues(kind), skipped: v.skipped.WithLabelValues(kind),
		inputs: v.inputs.WithLabelValues(kind), lateness: v.lateness.WithLabelValues(kind), took: v.tickSeconds.WithLabelValues(kind)}
	for i, f := range []string{"snapshot", "delta", "end"} {
		k.frames[i] = v.frames.WithLabelValues(kind, f)
		k.bytes[i] = v.bytes.WithLabelValues(kind, f)
		k.encodes[i] = v.encodes.WithLabelValues(kind, f)
	}
	return k
}

// WatchRooms exports shield_rooms{kind} and shield_room_members{kind},
// read from count at each scrape.
func (m *Metrics) WatchRooms(kinds []string, count func(kind string) (rooms, members int)) {
	for _, kind := range kinds {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "shield_rooms",
			Help: "Live rooms on this node, by kind.", ConstLabels: prometheus.Labels{"kind": kind}},
			func() float64 { n, _ := count(kind); return float64(n) }))
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "shield_room_members",
			Help: "Members of the live rooms on this node, suspended included, by kind.", ConstLabels: prometheus.Labels{"kind": kind}},
			func() float64 { _, n := count(kind); return float64(n) }))
	}
}

// Created counts a create's result: ok, failed or refused (max_rooms,
// also counted in shield_limits_hit_total{limit="max_rooms"}).
func (k *RoomKind) Created(result string) {
	k.v.created.WithLabelValues(k.kind, result).Inc()
	if result == "refused" {
		k.limits.WithLabelValues("max_rooms").Inc()
	}
}

// Closed counts a room's close by reason.
func (k *RoomKind) Closed(reason string) { k.v.closed.WithLabelValues(k.kind, reason).Inc() }

// Join counts a join's result.
func (k *RoomKind) Join(result string) { k.v.joins.WithLabelValues(k.kind, result).Inc() }

// Reservation counts a reserved seat's end by outcome.
func (k *RoomKind) Reservation(outcome string) {
	k.v.reservations.WithLabelValues(k.kind, outcome).Inc()
}

// Leave counts a leave by reason.
func (k *RoomKind) Leave(reason string) { k.v.leaves.WithLabelValues(k.kind, reason).Inc() }

// Tick counts a tick that ran: its lateness, its run, and the grid times
// skipped before it.
func (k *RoomKind) Tick(late, took time.Duration, skipped int) {
	k.ticks.Inc()
	if skipped > 0 {
		k.skipped.Add(float64(skipped))
	}
	k.lateness.Observe(late.Seconds())
	k.took.Observe(took.Seconds())
}

// TickError counts a failed tick by cause.
func (k *RoomKind) TickError(cause string) { k.v.tickErrors.WithLabelValues(k.kind, cause).Inc() }

// Inputs counts n inputs handed to room_tick.
func (k *RoomKind) Inputs(n int) { k.inputs.Add(float64(n)) }

// InputsDropped counts n inputs dropped for reason; queue_full is also
// shield_limits_hit_total{limit="room_input_queue"}.
func (k *RoomKind) InputsDropped(reason string, n int) {
	k.v.inputsDropped.WithLabelValues(k.kind, reason).Add(float64(n))
	if reason == "queue_full" {
		k.limits.WithLabelValues("room_input_queue").Add(float64(n))
	}
}

// StateFrames counts n accepted state frames of kind frame (0 snapshot,
// 1 delta, 2 end) and their bytes.
func (k *RoomKind) StateFrames(frame, n, bytes int) {
	k.frames[frame].Add(float64(n))
	k.bytes[frame].Add(float64(bytes))
}

// StateEncoded counts one state body encoded, of kind frame.
func (k *RoomKind) StateEncoded(frame int) { k.encodes[frame].Inc() }

// StateRejected counts n state frames the egress refused for reason.
func (k *RoomKind) StateRejected(reason string, n int) {
	k.v.rejected.WithLabelValues(k.kind, reason).Add(float64(n))
}

// Snapshot counts a snapshot sent, by cause.
func (k *RoomKind) Snapshot(cause string) { k.v.snapshots.WithLabelValues(k.kind, cause).Inc() }
