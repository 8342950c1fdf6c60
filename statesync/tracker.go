package statesync

import (
	"fmt"
	"strconv"
)

// MaxVersionOps bounds the ops a Tracker buffers for one version's parts:
// a state has at most 1,000,000 values (room.max_state_values), so a
// version that needs more is a broken server, not a big state.
const MaxVersionOps = 1 << 22

// Status is what Tracker.Receive made of a body.
type Status uint8

// The statuses.
const (
	// Applied: a whole version (all its parts) applied; the state is at
	// Update.Version.
	Applied Status = iota + 1
	// Partial: a part buffered, more of its version follows.
	Partial
	// Gap: nothing applied (section 8.3 step 2); send shield.room.sync
	// with SyncBody.
	Gap
	// Ended: an END; the state is dropped and the session is home again.
	Ended
)

// String names the status.
func (s Status) String() string {
	switch s {
	case Applied:
		return "applied"
	case Partial:
		return "partial"
	case Gap:
		return "gap"
	case Ended:
		return "end"
	}
	return "status " + strconv.Itoa(int(s))
}

// Update is what one body did to a Tracker.
type Update struct {
	Status Status
	// Kind is the frame's (0 when it did not decode).
	Kind FrameKind
	// Version is the state's version after an Applied, the frame's
	// otherwise.
	Version uint64
	// Ops is an Applied version's ops, every part's, in order: one change
	// event each (section 8.3).
	Ops []Op
	// Reason and Message are an END's.
	Reason, Message string
	// Sync says to send shield.room.sync now (at most one a second): a
	// Gap, or parts of a version that this frame broke off (it may still
	// have applied).
	Sync bool
	// Why says why a Gap frame that decoded did not apply, when that is
	// not an error (a DELTA from another base).
	Why string
}

// Tracker is a client's side of section 8.3: it keeps the state and its
// version, buffers a version's parts and applies them at once, discards a
// DELTA whose base is not its version, and drops the state at END. A Go
// client keeps one per room; the TypeScript RoomState is the same
// machine. It is not safe for concurrent use.
type Tracker struct {
	state   map[string]any // nil: no state (before a SNAPSHOT, after END)
	version uint64
	roomID  string
	tickHz  uint8

	pending *Frame // the first buffered part's header, nil for none
	ops     []Op   // the buffered parts' ops
	parts   int
	// skipping: a frame that did not decode had CONTINUES set, so what
	// follows up to a frame without it is the rest of a broken version.
	skipping bool
}

// State is the state at Version, nil when there is none. It is the
// Tracker's own: read it, do not change it.
func (t *Tracker) State() map[string]any { return t.state }

// Version is the state's version; ok is false when there is no state.
func (t *Tracker) Version() (v uint64, ok bool) { return t.version, t.state != nil }

// RoomID is the last SNAPSHOT's room id.
func (t *Tracker) RoomID() string { return t.roomID }

// TickHz is the last SNAPSHOT's tick rate (the client clocks itself with it).
func (t *Tracker) TickHz() uint8 { return t.tickHz }

// SyncBody is the body of shield.room.sync: {"version":N}, or {} without
// a state.
func (t *Tracker) SyncBody() []byte {
	if t.state == nil {
		return []byte("{}")
	}
	return []byte(`{"version":` + strconv.FormatUint(t.version, 10) + `}`)
}

// Receive takes one shield.room.state body. A body that does not decode,
// or a version that does not apply, is an error (a *FrameError) with a Gap
// update, and leaves the state as it was.
func (t *Tracker) Receive(body []byte) (Update, error) {
	f, err := Decode(body)
	if err != nil {
		t.drop()
		// A broken part's version goes on in the frames that follow; its
		// flags are still readable when the first three bytes are.
		t.skipping = len(body) >= 3 && body[0] == Format && body[2]&FlagContinues != 0 && FrameKind(body[1]) != EndFrame
		return Update{Status: Gap, Sync: true}, err
	}
	if t.skipping && f.Kind != EndFrame {
		t.skipping = f.Continues
		return Update{Status: Gap, Kind: f.Kind, Version: f.Version, Sync: true, Why: "the rest of a version whose part did not decode"}, nil
	}
	t.skipping = false
	broken := false
	if t.pending != nil && !continues(t.pending, &f) {
		t.drop()
		broken = true
	}
	if f.Kind == EndFrame {
		*t = Tracker{}
		return Update{Status: Ended, Kind: EndFrame, Reason: f.Reason, Message: f.Message}, nil
	}
	if f.Kind == DeltaFrame && t.pending == nil {
		switch {
		case t.state == nil:
			return Update{Status: Gap, Kind: f.Kind, Version: f.Version, Sync: true, Why: "a DELTA before any SNAPSHOT"}, nil
		case f.Base != t.version:
			return Update{Status: Gap, Kind: f.Kind, Version: f.Version, Sync: true,
				Why: fmt.Sprintf("a DELTA from version %d, but the state is at version %d", f.Base, t.version)}, nil
		}
	}
	if err := t.buffer(&f); err != nil {
		t.drop()
		t.skipping = f.Continues
		return Update{Status: Gap, Kind: f.Kind, Version: f.Version, Sync: true}, err
	}
	if f.Continues {
		return Update{Status: Partial, Kind: f.Kind, Version: f.Version, Sync: broken}, nil
	}
	ops := t.ops
	t.pending, t.ops, t.parts = nil, nil, 0
	if f.Kind == SnapshotFrame {
		state := map[string]any{}
		if err := Apply(state, ops); err != nil {
			return Update{Status: Gap, Kind: f.Kind, Version: f.Version, Sync: true}, err
		}
		t.state, t.version, t.roomID, t.tickHz = state, f.Version, f.RoomID, f.TickHz
	} else {
		if err := Apply(t.state, ops); err != nil {
			return Update{Status: Gap, Kind: f.Kind, Version: f.Version, Sync: true}, err
		}
		t.version = f.Version
	}
	return Update{Status: Applied, Kind: f.Kind, Version: f.Version, Ops: ops, Sync: broken}, nil
}

// buffer adds a part's ops to its version's, checking that they go on in
// path order from the previous part's.
func (t *Tracker) buffer(f *Frame) error {
	if t.pending == nil {
		h := *f
		h.Ops = nil
		t.pending = &h
	}
	t.parts++
	if len(t.ops) > 0 && len(f.Ops) > 0 {
		prev, first := t.ops[len(t.ops)-1].Path, f.Ops[0].Path
		switch Compare(first, prev) {
		case 0:
			return &FrameError{msg: fmt.Sprintf("state frame: part %d: op 1: %s twice", t.parts, first.Pointer())}
		case -1:
			return &FrameError{msg: fmt.Sprintf("state frame: part %d: op 1: %s comes before the previous part's %s (path order)", t.parts, first.Pointer(), prev.Pointer())}
		}
	}
	if len(t.ops)+len(f.Ops) > MaxVersionOps {
		return &FrameError{msg: fmt.Sprintf("state frame: part %d: more than %d ops in one version", t.parts, MaxVersionOps)}
	}
	if t.ops == nil {
		t.ops = f.Ops // one part: no copy
	} else {
		t.ops = append(t.ops[:len(t.ops):len(t.ops)], f.Ops...)
	}
	return nil
}

// continues reports whether f is the next part of the version whose first
// part's header is p.
func continues(p, f *Frame) bool {
	return f.Kind == p.Kind && f.Base == p.Base && f.Version == p.Version && f.RoomID == p.RoomID && f.TickHz == p.TickHz
}

// drop forgets buffered parts.
func (t *Tracker) drop() { t.pending, t.ops, t.parts = nil, nil, 0 }
