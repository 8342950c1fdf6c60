package session

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
)

// The tests here drive Registry.Bind the way the gateway does: every
// session's Closed hook removes it from the registry (as the gateway's
// does) and records what its target would hear, so a test can tell what
// had happened by the time Bind returned.

var (
	auth   = egress.ActorID{Service: "auth"}
	player = egress.ActorID{Service: "player"}
)

// policy is the registry policy under duplicate_login kick_old or
// reject_new.
func policy(kickOld bool) Policy { return Policy{KickOld: kickOld} }

// closeRecord is one onClose call: the Disconnected the target would get.
type closeRecord struct {
	id      uint64
	binding Binding
	reason  Reason
}

// fixture is a registry whose sessions report their close to it.
type fixture struct {
	t      *Registry
	mu     sync.Mutex // guards closes
	closes []closeRecord
}

func newFixture() *fixture { return &fixture{t: NewRegistry()} }

// testProfile is an idlen listener's profile.
var testProfile = func() *Profile {
	fr, err := envelope.New("idlen", envelope.FromClient, 1024)
	if err != nil {
		panic(err)
	}
	return &Profile{Listener: "game", Framer: fr, MaxFrameBytes: 1024, CodecKey: "json"}
}()

// testLimits are outbound_queue 4 and max_inflight 2.
var testLimits = Limits{MaxInflight: 2, Outbound: 4, OutboundBytes: 1 << 20}

// add registers a new session bound to auth/0 at epoch 1.
func (f *fixture) add(id uint64) *Session {
	s := New(id, "127.0.0.1:1", testProfile, Binding{Target: auth, Gateway: "gw"}, testLimits, Hooks{Closed: func(s *Session, b Binding, r Reason) {
		f.t.Remove(s, b)
		f.mu.Lock()
		f.closes = append(f.closes, closeRecord{s.ID, b, r})
		f.mu.Unlock()
	}})
	f.t.Add(s)
	return s
}

func (f *fixture) closed() []closeRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]closeRecord(nil), f.closes...)
}

// owner is the session the player index names for p, or nil.
func (f *fixture) owner(p string) *Session {
	f.t.mu.RLock()
	defer f.t.mu.RUnlock()
	return f.t.byPlayer[p]
}

func bindReq(s *Session, epoch uint64, caller egress.ActorID, p string) *egress.BindRequest {
	return &egress.BindRequest{Ref: egress.ClientRef{SessionID: s.ID, Epoch: epoch, Gateway: "gw"},
		PlayerID: p, Target: player, Caller: caller}
}

// wantCode fails unless err carries code ("" means no error).
func wantCode(t testing.TB, err *codes.Error, code codes.Code) {
	t.Helper()
	var got codes.Code
	if err != nil {
		got = err.Code
	}
	if got != code {
		t.Fatalf("code %q (%v), want %q", got, err, code)
	}
}

func TestBindRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture) *egress.BindRequest
		want  codes.Code
	}{
		{"session not found", func(f *fixture) *egress.BindRequest {
			return &egress.BindRequest{Ref: egress.ClientRef{SessionID: 99, Epoch: 1, Gateway: "gw"}, PlayerID: "p", Target: player, Caller: auth}
		}, codes.SessionNotFound},
		{"closed session", func(f *fixture) *egress.BindRequest {
			s := f.add(1)
			s.mu.Lock()
			s.closed.Store(true) // closing on another goroutine: onClose has not removed it yet
			s.mu.Unlock()
			return bindReq(s, 1, auth, "p")
		}, codes.SessionNotFound},
		{"epoch expired", func(f *fixture) *egress.BindRequest {
			return bindReq(f.add(1), 2, auth, "p")
		}, codes.EpochExpired},
		{"epoch expired before not target", func(f *fixture) *egress.BindRequest {
			return bindReq(f.add(1), 0, player, "p")
		}, codes.EpochExpired},
		{"not target", func(f *fixture) *egress.BindRequest {
			return bindReq(f.add(1), 1, player, "p")
		}, codes.NotTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			req := tc.setup(f)
			_, err := f.t.Bind(req, policy(true))
			wantCode(t, err, tc.want)
			if s := f.t.Get(req.Ref.SessionID); s != nil && s.Binding().Epoch != 1 {
				t.Errorf("a refused bind moved the epoch to %d", s.Binding().Epoch)
			}
			if f.owner("p") != nil {
				t.Error("a refused bind entered the player index")
			}
		})
	}
}

func TestBindMovesTargetAndEpoch(t *testing.T) {
	f := newFixture()
	s := f.add(1)
	ref, err := f.t.Bind(bindReq(s, 1, auth, "alice"), policy(true))
	wantCode(t, err, "")
	want := egress.ClientRef{SessionID: 1, Epoch: 2, PlayerID: "alice", Gateway: "gw"}
	if ref != want || s.Ref() != want {
		t.Fatalf("ref %+v, session %+v, want %+v", ref, s.Ref(), want)
	}
	if b := s.Binding(); b.Target != player {
		t.Fatalf("target %+v", b.Target)
	}
	if f.owner("alice") != s {
		t.Fatal("player index does not name the session")
	}
	// The old ref is now stale, and the old target may no longer bind.
	_, err = f.t.Bind(bindReq(s, 1, auth, "alice"), policy(true))
	wantCode(t, err, codes.EpochExpired)
	_, err = f.t.Bind(bindReq(s, 2, auth, "alice"), policy(true))
	wantCode(t, err, codes.NotTarget)
}

func TestRebindFreesOldPlayer(t *testing.T) {
	f := newFixture()
	s := f.add(1)
	if _, err := f.t.Bind(bindReq(s, 1, auth, "alice"), policy(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.t.Bind(bindReq(s, 2, player, "bob"), policy(false)); err != nil {
		t.Fatal(err)
	}
	if f.owner("alice") != nil || f.owner("bob") != s {
		t.Fatalf("index alice=%v bob=%v", f.owner("alice"), f.owner("bob"))
	}
	// alice is free: another session may take her, even under reject_new.
	other := f.add(2)
	if _, err := f.t.Bind(bindReq(other, 1, auth, "alice"), policy(false)); err != nil {
		t.Fatalf("alice after rebind: %v", err)
	}
	if len(f.closed()) != 0 {
		t.Fatalf("nobody should have been closed: %+v", f.closed())
	}
	// Binding the same player again on the same session is no duplicate.
	if _, err := f.t.Bind(bindReq(s, 3, player, "bob"), policy(false)); err != nil {
		t.Fatalf("same player again: %v", err)
	}
}

func TestKickOldClosesBeforeReturning(t *testing.T) {
	f := newFixture()
	old, cur := f.add(1), f.add(2)
	if _, err := f.t.Bind(bindReq(old, 1, auth, "alice"), policy(true)); err != nil {
		t.Fatal(err)
	}
	ref, err := f.t.Bind(bindReq(cur, 1, auth, "alice"), policy(true))
	wantCode(t, err, "")
	// No waiting: all of this held when Bind returned.
	closes := f.closed()
	if len(closes) != 1 || closes[0].id != 1 || closes[0].reason != Kicked {
		t.Fatalf("closes %+v, want session 1 kicked", closes)
	}
	if b := closes[0].binding; b.PlayerID != "alice" || b.Epoch != 2 || b.Target != player {
		t.Fatalf("the old session's Disconnected names %+v", b)
	}
	select {
	case <-old.Done():
	default:
		t.Fatal("old session's Done is open")
	}
	if n := old.Notice(); n == nil || n.Kind != envelope.Notice || n.Code != string(codes.SessionKicked) {
		t.Fatalf("old session's notice %+v", n)
	}
	if f.t.Get(1) != nil || f.owner("alice") != cur || ref.PlayerID != "alice" || ref.SessionID != 2 {
		t.Fatalf("table after kick: get(1)=%v owner=%v ref=%+v", f.t.Get(1), f.owner("alice"), ref)
	}
	if old.Offer(&envelope.Frame{Kind: envelope.Push}) {
		t.Fatal("a kicked session accepted a frame")
	}
}

func TestRejectNewKeepsOld(t *testing.T) {
	f := newFixture()
	old, cur := f.add(1), f.add(2)
	if _, err := f.t.Bind(bindReq(old, 1, auth, "alice"), policy(false)); err != nil {
		t.Fatal(err)
	}
	_, err := f.t.Bind(bindReq(cur, 1, auth, "alice"), policy(false))
	wantCode(t, err, codes.PlayerOnline)
	if len(f.closed()) != 0 || f.owner("alice") != old {
		t.Fatalf("closes %+v, owner %v", f.closed(), f.owner("alice"))
	}
	if b := cur.Binding(); b.Epoch != 1 || b.PlayerID != "" || b.Target != auth {
		t.Fatalf("refused session's binding changed: %+v", b)
	}
}

// TestBindAfterHolderClosing: a player whose session is closing on another
// goroutine (closed, onClose not finished) is free, under either policy,
// and Bind returns only once that session's onClose has run.
func TestBindAfterHolderClosing(t *testing.T) {
	for _, kickOld := range []bool{true, false} {
		t.Run(fmt.Sprint("kick_old=", kickOld), func(t *testing.T) {
			f := newFixture()
			release := make(chan struct{})
			entered := make(chan struct{})
			holder := New(1, "a", testProfile, Binding{Target: auth, Gateway: "gw"}, testLimits, Hooks{Closed: func(s *Session, b Binding, r Reason) {
				close(entered)
				<-release
				f.t.Remove(s, b)
			}})
			f.t.Add(holder)
			if _, err := f.t.Bind(bindReq(holder, 1, auth, "alice"), policy(kickOld)); err != nil {
				t.Fatal(err)
			}
			go holder.Close(Closed, nil)
			<-entered
			cur := f.add(2)
			done := make(chan *codes.Error, 1)
			go func() {
				_, err := f.t.Bind(bindReq(cur, 1, auth, "alice"), policy(kickOld))
				done <- err
			}()
			select {
			case err := <-done:
				t.Fatalf("Bind returned (%v) before the old session's onClose finished", err)
			case <-time.After(50 * time.Millisecond):
			}
			close(release)
			select {
			case err := <-done:
				wantCode(t, err, "")
			case <-time.After(5 * time.Second):
				t.Fatal("Bind did not return")
			}
			if f.owner("alice") != cur {
				t.Fatal("the new session does not own the player")
			}
			if _, r := holder.Closed(); r != Closed {
				t.Fatalf("holder's reason %q: the first reason must win", r)
			}
		})
	}
}

// TestConcurrentBindsOnePlayer: two sessions bind the same player at once,
// many times over. Exactly one owns the player at the end; under kick_old
// the other is closed, under reject_new it got player_online. Run with
// -race.
func TestConcurrentBindsOnePlayer(t *testing.T) {
	for _, kickOld := range []bool{true, false} {
		t.Run(fmt.Sprint("kick_old=", kickOld), func(t *testing.T) {
			for i := 0; i < 200; i++ {
				f := newFixture()
				ss := []*Session{f.add(1), f.add(2)}
				errs := make([]*codes.Error, 2)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for j, s := range ss {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						_, errs[j] = f.t.Bind(bindReq(s, 1, auth, "alice"), policy(kickOld))
					}()
				}
				close(start)
				wg.Wait()
				owner := f.owner("alice")
				if owner == nil {
					t.Fatalf("round %d: nobody owns the player (errs %v)", i, errs)
				}
				live := 0
				for j, s := range ss {
					closed, _ := s.Closed()
					if !closed {
						live++
						if s != owner {
							if kickOld || errs[j] == nil || errs[j].Code != codes.PlayerOnline {
								t.Fatalf("round %d: live session %d is not the owner (err %v)", i, s.ID, errs[j])
							}
						}
					} else if !kickOld {
						t.Fatalf("round %d: reject_new closed session %d", i, s.ID)
					}
				}
				if kickOld && live != 1 {
					t.Fatalf("round %d: %d live sessions after kick_old, errs %v", i, live, errs)
				}
				if closed, _ := owner.Closed(); closed {
					t.Fatalf("round %d: the owner is closed", i)
				}
			}
		})
	}
}

// TestBindRacesClose: a session binding while it closes either binds
// before the close (its Disconnected names the player and the index is
// clean afterwards) or is refused with session_not_found; it never ends
// bound with a Disconnected that told the old target.
func TestBindRacesClose(t *testing.T) {
	for i := 0; i < 500; i++ {
		f := newFixture()
		s := f.add(1)
		var wg sync.WaitGroup
		var err *codes.Error
		wg.Add(2)
		go func() { defer wg.Done(); _, err = f.t.Bind(bindReq(s, 1, auth, "alice"), policy(true)) }()
		go func() { defer wg.Done(); s.Close(Closed, nil) }()
		wg.Wait()
		closes := f.closed()
		if len(closes) != 1 {
			t.Fatalf("round %d: %d closes", i, len(closes))
		}
		b := closes[0].binding
		switch {
		case err == nil:
			if b.PlayerID != "alice" || b.Epoch != 2 || b.Target != player {
				t.Fatalf("round %d: bind succeeded but the Disconnected went to %+v", i, b)
			}
		case err.Code == codes.SessionNotFound:
			if b.PlayerID != "" || b.Epoch != 1 || b.Target != auth {
				t.Fatalf("round %d: bind refused but the Disconnected names %+v", i, b)
			}
		default:
			t.Fatalf("round %d: %v", i, err)
		}
		if f.owner("alice") != nil || f.t.Len() != 0 {
			t.Fatalf("round %d: the closed session stayed in the table", i)
		}
	}
}

func TestCloseOnce(t *testing.T) {
	f := newFixture()
	s := f.add(1)
	n := &envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionIdleTimeout)}
	if !s.Close(IdleTimeout, n) {
		t.Fatal("first Close reported false")
	}
	if s.Close(Kicked, KickNotice("late")) {
		t.Fatal("second Close reported true")
	}
	if _, r := s.Closed(); r != IdleTimeout || s.Notice() != n || len(f.closed()) != 1 {
		t.Fatalf("reason %q notice %+v closes %d", r, s.Notice(), len(f.closed()))
	}
	if s.Ref().Epoch != 1 {
		t.Fatal("epoch moved on close")
	}
}

// TestQueueBounds: pushes fill outbound_queue and outbound_queue_bytes
// and no more; answers always find room (each holds its request's
// max_inflight slot until taken to be written); edge refusals wait at most
// max_inflight at once; one heartbeat echo waits at a time; status frames
// always find room; nothing ever blocks, and a closed session takes
// nothing.
func TestQueueBounds(t *testing.T) {
	f := newFixture()
	s := f.add(1) // outbound_queue 4, max_inflight 2
	push := &envelope.Frame{Kind: envelope.Push, RouteID: 1, Body: []byte("x")}
	answer := &envelope.Frame{Kind: envelope.Response, RouteID: 1, RequestID: 1}
	refusal := &envelope.Frame{Kind: envelope.Error, RequestID: 2, Code: "client_rpc.busy"}
	for i := 0; i < 4; i++ {
		if !s.Offer(push) {
			t.Fatalf("push %d refused", i)
		}
	}
	if s.Offer(push) {
		t.Fatal("a push passed outbound_queue")
	}
	for i := 0; i < 10; i++ {
		if !queueAnswer(s, answer) {
			t.Fatalf("answer %d refused", i)
		}
	}
	for i := 0; i < 6; i++ {
		if !s.Refuse(refusal) {
			t.Fatalf("refusal %d refused with max_inflight 2 and outbound_queue 4", i)
		}
	}
	if s.Refuse(refusal) {
		t.Fatal("a refusal passed max_inflight + outbound_queue")
	}
	if !s.Echo() || s.Echo() {
		t.Fatal("heartbeat echoes: want one waiting at a time")
	}
	if !s.Status(&envelope.Frame{Kind: envelope.Notice, Code: "gateway.drain_started", GraceMS: 1}) {
		t.Fatal("a status frame refused")
	}
	batch := s.Take(nil)
	if len(batch) != 4+10+6+1+1 {
		t.Fatalf("took %d frames", len(batch))
	}
	if s.Offer(push) {
		t.Fatal("frames taken by the write loop stopped counting before they were written")
	}
	if !s.Echo() { // TestEchoWaitingUntilTaken
		t.Fatal("an echo taken by the write loop still waits")
	}
	s.Written(batch)
	if !s.Offer(push) || s.Echo() {
		t.Fatal("the bounds did not reset once the frames were written")
	}
	s.Close(Closed, nil)
	if s.Offer(push) || queueAnswer(s, answer) || s.Refuse(refusal) || s.Status(answer) {
		t.Fatal("a closed session took a frame")
	}
}

// TestQueueBytes: outbound_queue_bytes bounds the bytes of waiting pushes.
func TestQueueBytes(t *testing.T) {
	s := New(1, "a", testProfile, Binding{Gateway: "gw"}, Limits{MaxInflight: 1, Outbound: 100, OutboundBytes: 10}, Hooks{})
	if !s.Offer(&envelope.Frame{Kind: envelope.Push, Body: make([]byte, 6)}) {
		t.Fatal("6 bytes refused")
	}
	if s.Offer(&envelope.Frame{Kind: envelope.Push, Body: make([]byte, 5)}) {
		t.Fatal("11 bytes passed outbound_queue_bytes 10")
	}
	if !s.Offer(&envelope.Frame{Kind: envelope.Push, Body: make([]byte, 4)}) {
		t.Fatal("10 bytes refused")
	}
}

// TestInflightSlots: TryAcquire takes at most max_inflight slots however
// many goroutines ask at once; an answer holds its slot until the writer
// is about to write it (Sending), or drops it.
func TestInflightSlots(t *testing.T) {
	s := New(1, "a", testProfile, Binding{Gateway: "gw"}, Limits{MaxInflight: 8, Outbound: 1, OutboundBytes: 1}, Hooks{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s.TryAcquire() {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got != 8 || s.Inflight() != 8 {
		t.Fatalf("%d slots taken (%d counted), want 8", got, s.Inflight())
	}
	queueAnswer(s, &envelope.Frame{Kind: envelope.Response, RouteID: 1, RequestID: 1})
	if s.Inflight() != 8 {
		t.Fatal("an answer gave its slot back before it was taken to be written")
	}
	batch := s.Take(nil)
	if s.Inflight() != 8 {
		t.Fatal("an answer gave its slot back when taken, before the writer was about to write it")
	}
	s.Sending(batch)
	s.Sending(batch)
	if s.Inflight() != 7 {
		t.Fatalf("%d slots after the answer's Sending (twice), want 7", s.Inflight())
	}
	s.Written(batch)
	if s.Inflight() != 7 {
		t.Fatalf("%d slots after the sent answer was Written, want 7", s.Inflight())
	}
	// An answer dropped before Sending (its connection failed) gives its
	// slot back at Written; one requeued keeps it.
	queueAnswer(s, &envelope.Frame{Kind: envelope.Response, RouteID: 1, RequestID: 2})
	queueAnswer(s, &envelope.Frame{Kind: envelope.Response, RouteID: 1, RequestID: 3})
	batch = s.Take(nil)
	s.Requeue(batch[1:])
	s.Written(batch[:1])
	if s.Inflight() != 6 {
		t.Fatalf("%d slots after one answer dropped and one requeued, want 6", s.Inflight())
	}
	s.Written(s.Take(nil))
	if s.Inflight() != 5 {
		t.Fatalf("%d slots after the requeued answer was dropped, want 5", s.Inflight())
	}
}

// TestEchoWaitingUntilTaken (SPEC §7): a heartbeat echo finds room unless
// an earlier one waits; one the writer took is not waiting, even before
// it is Written (the client may send its next heartbeat as soon as the
// echo arrives). A requeued echo waits again.
func TestEchoWaitingUntilTaken(t *testing.T) {
	s := New(1, "a", testProfile, Binding{Gateway: "gw"}, testLimits, Hooks{})
	if !s.Echo() || s.Echo() {
		t.Fatal("want the first echo queued and the second refused while it waits")
	}
	batch := s.Take(nil)
	if !s.Echo() {
		t.Fatal("an echo taken by the writer still counted as waiting")
	}
	s.Written(batch)
	batch = s.Take(nil)
	s.Requeue(batch)
	if s.Echo() {
		t.Fatal("a requeued echo did not count as waiting")
	}
}

// TestMain checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			fmt.Printf("leaked goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
			code = 1
		}
	}
	os.Exit(code)
}

// TestLiveIDsUnique (SPEC §4): a session_id is unique among the live
// sessions: Add refuses a second session with a live one's id (the
// gateway then draws another), and takes it again once that one closed.
func TestLiveIDsUnique(t *testing.T) {
	f := newFixture()
	first := f.add(7)
	dup := New(7, "127.0.0.1:2", testProfile, Binding{Target: auth, Gateway: "gw"}, testLimits, Hooks{})
	if f.t.Add(dup) {
		t.Fatal("Add took a second session with a live session's id")
	}
	if f.t.Get(7) != first {
		t.Fatal("the refused session replaced the live one")
	}
	first.Close(Closed, nil)
	again := New(7, "127.0.0.1:3", testProfile, Binding{Target: auth, Gateway: "gw"}, testLimits, Hooks{})
	if !f.t.Add(again) || f.t.Get(7) != again {
		t.Fatal("Add refused the id of a closed session")
	}
	for i := 0; i < 1000; i++ {
		if id := f.t.NewID(); id == 0 || id >= 1<<53 {
			t.Fatalf("NewID drew %d", id)
		}
	}
}

// TestAnswersLater: a run of answers is queued in order, all of them, and
// none once the session closed.
func TestAnswersLater(t *testing.T) {
	f := newFixture()
	s := f.add(1)
	run := []*envelope.Frame{
		{Kind: envelope.Response, RouteID: 1, RequestID: 1},
		{Kind: envelope.Response, RouteID: 1, RequestID: 2},
		{Kind: envelope.Error, RouteID: 1, RequestID: 3, Code: "client_rpc.handler_failed"},
	}
	if !s.AnswersLater(run) {
		t.Fatal("an open session refused its answers")
	}
	batch := s.Take(nil)
	if len(batch) != 3 {
		t.Fatalf("took %d frames, want 3", len(batch))
	}
	for i, it := range batch {
		if it.Frame != run[i] {
			t.Fatalf("frame %d is %+v, want %+v", i, it.Frame, run[i])
		}
	}
	s.Close(Closed, nil)
	if s.AnswersLater(run) || len(s.Take(nil)) != 0 {
		t.Fatal("a closed session took answers")
	}
}

// queueAnswer queues one answer as the gateway does (Gateway.Respond): a run of
// one, then a wake.
func queueAnswer(s *Session, f *envelope.Frame) bool {
	if !s.AnswersLater([]*envelope.Frame{f}) {
		return false
	}
	s.Wake()
	return true
}
