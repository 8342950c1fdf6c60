package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/statesync"
)

// RoomsOptions describe one rooms run (docs/rooms.md §14): Rooms rooms of
// Members logged-in members each, ticking at Hz with a state of Fields
// fields of which Changing change per tick; every member sends Hz inputs
// a second. Baseline runs the shield.timeout game instead of the room
// kind.
type RoomsOptions struct {
	Addr               string
	Rooms, Members, Hz int
	Fields, Changing   int
	Baseline           bool
	Duration, Warmup   time.Duration
	Measuring          func(begin bool) // called as the measured time begins and ends (server counters)
	OnRoom             func(id string)  // each room made, by its id
	ConnectTimeout     time.Duration    // 0: 60s for the logins, makes and joins
}

// RoomsResult is what a rooms run measured on the clients' side: state
// frames (rooms: through a statesync.Tracker each; baseline: JSON decoded
// and applied to a map), their body bytes, the inputs sent, and each
// frame's delivery lateness: its arrival minus its tick's place on the
// room's grid, the grid being set by the member's earliest frame relative
// to it (so: the lateness of the tick plus what the frame waited for).
type RoomsResult struct {
	Frames, Bytes, Inputs, Errors uint64
	Elapsed                       time.Duration
	Delivery                      *Histogram
}

// String is one line for a report.
func (r RoomsResult) String() string {
	perFrame := 0.0
	if r.Frames > 0 {
		perFrame = float64(r.Bytes) / float64(r.Frames)
	}
	return fmt.Sprintf("%8.0f frames/s  %5.1f B/frame  inputs %7.0f/s  delivery lateness p50 %7s p99 %7s  errors %d",
		float64(r.Frames)/r.Elapsed.Seconds(), perFrame, float64(r.Inputs)/r.Elapsed.Seconds(),
		r.Delivery.Quantile(0.5), r.Delivery.Quantile(0.99), r.Errors)
}

// roomMember is one member's connection and what its reader saw.
type roomMember struct {
	c        net.Conn
	room     string
	tr       statesync.Tracker
	fields   map[string]any // the baseline's applied state
	offsets  []int64        // arrival minus tick × period, ns, while measuring
	period   int64          // the tick period, ns
	frames   uint64
	bytes    uint64
	errs     uint64
	measured *atomic.Bool
}

// Rooms runs the rooms load and returns once Duration has passed after
// Warmup. One goroutine reads each member's connection; inputWriters
// write the inputs at Hz, each for its share of the members, so that a
// connection the server is slow to read holds up only its share.
func Rooms(ctx context.Context, o RoomsOptions) (RoomsResult, error) {
	if o.Rooms <= 0 || o.Members <= 0 || o.Hz <= 0 || o.Fields <= 0 || o.Changing <= 0 || o.Changing > o.Fields {
		return RoomsResult{}, errors.New("bench: rooms needs rooms, members, hz, fields and 1..fields changing")
	}
	setup, cancel := context.WithTimeout(ctx, orDefault(o.ConnectTimeout, 60*time.Second))
	defer cancel()
	var measuring atomic.Bool
	members := make([]*roomMember, 0, o.Rooms*o.Members)
	defer func() {
		for _, m := range members {
			m.c.Close()
		}
	}()
	var d net.Dialer
	for r := range o.Rooms {
		var room string
		for j := range o.Members {
			c, err := d.DialContext(setup, "tcp", o.Addr)
			if err != nil {
				return RoomsResult{}, fmt.Errorf("bench: dial: %w", err)
			}
			m := &roomMember{c: c, fields: map[string]any{}, measured: &measuring, period: int64(time.Second) / int64(o.Hz)}
			members = append(members, m)
			pid, _ := json.Marshal(fmt.Sprintf("m%d-%d", r, j))
			if _, err := m.ask(setup, RoomsLogin, pid); err != nil {
				return RoomsResult{}, fmt.Errorf("bench: login: %w", err)
			}
			if j == 0 {
				req, _ := json.Marshal(map[string]any{"fields": o.Fields, "changing": o.Changing, "hz": o.Hz, "baseline": o.Baseline})
				b, err := m.ask(setup, RoomsMake, req)
				if err != nil || json.Unmarshal(b, &room) != nil {
					return RoomsResult{}, fmt.Errorf("bench: make a room: %v (%q)", err, b)
				}
				if o.OnRoom != nil {
					o.OnRoom(room)
				}
			}
			m.room = room
			join, route := fmt.Appendf(nil, `{"room":%q}`, room), uint32(RouteRoomsJoin)
			if o.Baseline {
				route = RoomsTJoin
			}
			if _, err := m.ask(setup, route, join); err != nil {
				return RoomsResult{}, fmt.Errorf("bench: join %s: %w", room, err)
			}
		}
	}
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.read(o.Baseline)
		}()
	}
	stopInputs := make(chan struct{})
	var inputs atomic.Uint64
	for w := range inputWriters {
		var share []*roomMember
		for i := w; i < len(members); i += inputWriters {
			share = append(share, members[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeInputs(share, o, stopInputs, &measuring, &inputs)
		}()
	}

	sleep(ctx, o.Warmup)
	if o.Measuring != nil {
		o.Measuring(true)
	}
	start := time.Now()
	measuring.Store(true)
	sleep(ctx, o.Duration)
	measuring.Store(false)
	elapsed := time.Since(start)
	if o.Measuring != nil {
		o.Measuring(false)
	}
	close(stopInputs)
	for _, m := range members {
		m.c.SetReadDeadline(time.Now())
	}
	wg.Wait()

	res := RoomsResult{Elapsed: elapsed, Delivery: NewHistogram(), Inputs: inputs.Load()}
	for _, m := range members {
		res.Frames += m.frames
		res.Bytes += m.bytes
		res.Errors += m.errs
		if len(m.offsets) == 0 {
			continue
		}
		base := slices.Min(m.offsets)
		for _, off := range m.offsets {
			res.Delivery.Record(time.Duration(off - base))
		}
	}
	return res, ctx.Err()
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// ask sends a request and waits for its answer's body, handing the pushes
// read meanwhile (a SNAPSHOT may come before the join's answer) to the
// member.
func (m *roomMember) ask(ctx context.Context, route uint32, body []byte) ([]byte, error) {
	if d, ok := ctx.Deadline(); ok {
		m.c.SetDeadline(d)
	}
	defer m.c.SetDeadline(time.Time{})
	if _, err := m.c.Write(frameOf(route, loginID, body)); err != nil {
		return nil, err
	}
	var hdr [12]byte
	for {
		if _, err := io.ReadFull(m.c, hdr[:]); err != nil {
			return nil, err
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n < 8 {
			return nil, fmt.Errorf("frame length %d", n)
		}
		b := make([]byte, n-8)
		if _, err := io.ReadFull(m.c, b); err != nil {
			return nil, err
		}
		if binary.BigEndian.Uint32(hdr[8:]) != loginID {
			m.apply(routeOf(hdr[5:8]), b, 0, false)
			continue
		}
		if err := loginAnswer(hdr[5:8]); err != nil {
			return nil, fmt.Errorf("%w: %s", err, b)
		}
		return b, nil
	}
}

func routeOf(rt []byte) uint32 { return uint32(rt[0])<<16 | uint32(rt[1])<<8 | uint32(rt[2]) }

// read reads the member's frames until its connection fails or its
// deadline passes, applying each state push.
func (m *roomMember) read(baseline bool) {
	eachFrame(m.c, make([]byte, 64<<10), func(f []byte) {
		if binary.BigEndian.Uint32(f[8:]) == 0 { // a push
			m.apply(routeOf(f[5:8]), f[12:], time.Now().UnixNano(), baseline)
		}
	})
}

// apply takes one push at now (0: before the measured time).
func (m *roomMember) apply(route uint32, body []byte, now int64, baseline bool) {
	var tick uint64
	switch {
	case route == RoomsTState && baseline:
		var p struct {
			T uint64
			F map[string]any
		}
		if json.Unmarshal(body, &p) != nil {
			m.errs++
			return
		}
		for k, v := range p.F {
			m.fields[k] = v
		}
		tick = p.T
	case route == 65520 && !baseline: // shield.room.state
		u, err := m.tr.Receive(body)
		if err != nil {
			m.errs++
			return
		}
		if u.Status != statesync.Applied {
			return
		}
		tick = u.Version
	default:
		return
	}
	if now == 0 || !m.measured.Load() {
		return
	}
	m.frames++
	m.bytes += uint64(len(body))
	m.offsets = append(m.offsets, now-int64(tick)*m.period)
}

// inputWriters are the goroutines writing inputs.
const inputWriters = 16

// writeInputs sends each of members one input each 1/Hz until stop, on the
// tick grid of its own: a write that falls behind skips, never bursts.
func writeInputs(members []*roomMember, o RoomsOptions, stop chan struct{}, measuring *atomic.Bool, sent *atomic.Uint64) {
	t := time.NewTicker(time.Second / time.Duration(o.Hz))
	defer t.Stop()
	var x int
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		x++
		for _, m := range members {
			var f []byte
			if o.Baseline {
				f = frameOf(RoomsTInput, 0, fmt.Appendf(nil, `{"room":%q,"x":%d}`, m.room, x))
			} else {
				f = frameOf(RoomsInput, 0, fmt.Appendf(nil, `{"x":%d}`, x))
			}
			if _, err := m.c.Write(f); err == nil && measuring.Load() {
				sent.Add(1)
			}
		}
	}
}
