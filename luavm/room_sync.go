package luavm

import (
	"strconv"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/statesync"
)

// syncGroup is the members that get one encoding (§7.3): the same view
// and the same base (or a snapshot).
type syncGroup struct {
	view     statesync.View
	snapshot bool
	base     uint64
	members  []*member
}

// syncAll sends every live, unsuspended member the changes since its base
// (§7.3), one encoding per distinct (view, base).
func (vm *VM) syncAll() {
	r := vm.room
	groups := map[string]*syncGroup{}
	var order []string
	for _, m := range r.members {
		if !m.live || m.leaving || m.suspended {
			continue
		}
		vm.checkBehind(m)
		if !m.snapshot && m.base == r.version {
			continue
		}
		key := m.viewKey + "|" + strconv.FormatUint(m.base, 10)
		if m.snapshot {
			key = m.viewKey + "|s"
		}
		g := groups[key]
		if g == nil {
			g = &syncGroup{view: m.view, snapshot: m.snapshot, base: m.base}
			groups[key] = g
			order = append(order, key)
		}
		g.members = append(g.members, m)
	}
	for _, key := range order {
		vm.sendGroup(groups[key])
	}
}

// syncMember sends one member what it lacks now (its join's snapshot).
func (vm *VM) syncMember(m *member) {
	vm.checkBehind(m)
	vm.sendGroup(&syncGroup{view: m.view, snapshot: m.snapshot, base: m.base, members: []*member{m}})
}

// checkBehind turns a member whose base is older than the history kept
// into a snapshot (§7.5).
func (vm *VM) checkBehind(m *member) {
	r := vm.room
	if !m.snapshot && r.version-m.base > uint64(len(r.history)) {
		m.snapshot, m.snapCause = true, "behind"
	}
}

// sendGroup encodes the group's frames once and pushes each part to every
// member still taking them; a member's base moves only when it accepted
// every part (§7.3, §8.2).
func (vm *VM) sendGroup(g *syncGroup) {
	r := vm.room
	var parts [][]byte
	var err error
	if g.snapshot {
		cs, serr := statesync.Snapshot(g.view.Tree(r.tree))
		if serr != nil {
			vm.log.Error("room state snapshot failed", "room", r.id, "error", serr)
			return
		}
		parts, err = statesync.AppendSnapshot(nil, r.id, uint8(r.cfg.TickHz), r.version, cs.Ops(), r.cfg.MaxFrameBytes)
	} else {
		from := len(r.history) - int(r.version-g.base)
		cs, cerr := statesync.Compose(r.history[from:]...)
		if cerr != nil {
			vm.log.Error("room state compose failed", "room", r.id, "error", cerr)
			return
		}
		ops := g.view.Filter(cs)
		if len(ops) == 0 && r.version-g.base < uint64(max(len(r.history)/2, 1)) {
			return // nothing the view shows changed: no frame (§7.3)
		}
		// An empty delta now and then moves a quiet view's base, so it
		// never falls behind the history into a snapshot.
		parts, err = statesync.AppendDelta(nil, g.base, r.version, ops, r.cfg.MaxFrameBytes)
	}
	if err != nil {
		vm.log.Error("room state encode failed", "room", r.id, "error", err)
		return
	}
	frame := FrameDelta
	if g.snapshot {
		frame = FrameSnapshot
	}
	r.m.StateEncoded(frame)
	targets := make([]egress.ClientRef, len(g.members))
	for i, m := range g.members {
		targets[i] = m.ref
	}
	ok := make([]bool, len(g.members))
	for i := range ok {
		ok[i] = true
	}
	sink := vm.sink()
	if sink == nil {
		return
	}
	for _, body := range parts {
		p := &egress.Push{RouteID: descriptor.RouteRoomState, Bodies: vm.binaryBodies(body), Targets: targets[:0:0]}
		idx := make([]int, 0, len(targets))
		for i := range targets {
			if ok[i] {
				p.Targets = append(p.Targets, targets[i])
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			break
		}
		var refused []codes.Code
		func() {
			defer vm.guard("gateway Push")
			refused = sink.Push(p)
		}()
		took := 0
		for j, i := range idx {
			switch {
			case j >= len(refused):
				ok[i] = false
			case refused[j] != "":
				ok[i] = false
				r.m.StateRejected(refused[j].Reason(), 1)
			default:
				took++
			}
		}
		r.m.StateFrames(frame, took, took*len(body))
	}
	for i, m := range g.members {
		if ok[i] {
			if m.snapshot {
				r.m.Snapshot(m.snapCause)
			}
			m.base, m.snapshot = r.version, false
		}
	}
}
