package match

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/egress"
)

func testQueue(min, max int, fill time.Duration) *Queue {
	return New(config.Queue{Name: "duel", Room: "arena", MinPlayers: min, MaxPlayers: max, FillWait: fill,
		Interval: 250 * time.Millisecond, TicketTTL: time.Minute, ReservationTTL: 15 * time.Second, MaxTickets: 100})
}

func ref(pid string) egress.ClientRef {
	return egress.ClientRef{SessionID: 1, Epoch: 1, PlayerID: pid, Gateway: "gw"}
}

func num(f float64) *float64 { return &f }

// players names a match's tickets' players, in its order.
func players(m []*Ticket) string {
	var out []string
	for _, t := range m {
		out = append(out, t.Player())
	}
	return strings.Join(out, ",")
}

// TestPass is §9.2's pass, one case per rule.
func TestPass(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type ticket struct {
		pid   string
		props Props
		query Query
		age   time.Duration // how long before the pass it came
	}
	cases := []struct {
		name     string
		min, max int
		fill     time.Duration
		tickets  []ticket
		want     []string // the matches' players
		waiting  int
	}{
		{"a full group forms at once", 2, 2, time.Hour, []ticket{{pid: "a"}, {pid: "b"}}, []string{"a,b"}, 0},
		{"oldest first, by age", 2, 2, time.Hour, []ticket{{pid: "a"}, {pid: "b"}, {pid: "c"}}, []string{"a,b"}, 1},
		{"short of max waits for fill_wait", 2, 4, 5 * time.Second,
			[]ticket{{pid: "a", age: time.Second}, {pid: "b"}}, nil, 2},
		{"short of max forms after fill_wait", 2, 4, 5 * time.Second,
			[]ticket{{pid: "a", age: 6 * time.Second}, {pid: "b"}}, []string{"a,b"}, 0},
		{"fill_wait 0 forms at min at once", 2, 4, 0, []ticket{{pid: "a"}, {pid: "b"}, {pid: "c"}}, []string{"a,b,c"}, 0},
		{"below min never forms", 3, 4, 0, []ticket{{pid: "a"}, {pid: "b"}}, nil, 2},
		{"equality query", 2, 2, 0, []ticket{
			{pid: "a", props: Props{"mode": "ranked"}, query: Query{"mode": {Eq: "ranked"}}},
			{pid: "b", props: Props{"mode": "casual"}},
			{pid: "c", props: Props{"mode": "ranked"}},
		}, []string{"a,c"}, 1},
		{"both sides' queries must hold", 2, 2, 0, []ticket{
			{pid: "a", props: Props{"skill": 1500.0}},
			{pid: "b", props: Props{"skill": 1000.0}, query: Query{"skill": {Max: num(1200)}}},
			{pid: "c", props: Props{"skill": 1100.0}},
		}, []string{"a,c"}, 1},
		{"range bounds are inclusive, a missing key fails", 2, 2, 0, []ticket{
			{pid: "a", query: Query{"skill": {Min: num(1000), Max: num(1200)}}},
			{pid: "b"},
			{pid: "c", props: Props{"skill": 1200.0}},
		}, []string{"a,c"}, 1},
		{"every member compatible with all the group", 3, 3, 0, []ticket{
			{pid: "a", props: Props{"r": "eu"}},
			{pid: "b", props: Props{"r": "us"}, query: Query{"r": {Eq: "us"}}},
			{pid: "c", props: Props{"r": "eu"}},
			{pid: "d", props: Props{"r": "eu"}},
		}, []string{"a,c,d"}, 1},
		{"several matches in one pass", 2, 2, 0, []ticket{{pid: "a"}, {pid: "b"}, {pid: "c"}, {pid: "d"}, {pid: "e"}},
			[]string{"a,b", "c,d"}, 1},
		{"the next anchor after a failed one", 2, 2, 0, []ticket{
			{pid: "a", query: Query{"x": {Eq: true}}},
			{pid: "b"}, {pid: "c"},
		}, []string{"b,c"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := testQueue(c.min, c.max, c.fill)
			for _, tk := range c.tickets {
				if _, err := q.Enqueue(ref(tk.pid), tk.props, tk.query, t0.Add(-tk.age)); err != nil {
					t.Fatal(err)
				}
			}
			matches, expired := q.Pass(t0)
			var got []string
			for _, m := range matches {
				got = append(got, players(m))
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) || len(expired) != 0 || q.Len() != c.waiting {
				t.Fatalf("matches %v, expired %d, waiting %d; want %v, 0, %d", got, len(expired), q.Len(), c.want, c.waiting)
			}
		})
	}
}

// TestQueueTickets: the ticket's id, busy, already_queued, cancel once,
// expiry, and a create's failure returning the tickets with their ages.
func TestQueueTickets(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := testQueue(2, 2, 0)
	q.cfg.MaxTickets = 2
	a, err := q.Enqueue(ref("a"), nil, nil, t0)
	if err != nil || !strings.HasPrefix(a.ID, "duel/") || len(a.ID) != len("duel/")+16 {
		t.Fatalf("ticket %+v %v", a, err)
	}
	if _, err := q.Enqueue(ref("a"), nil, nil, t0); err == nil || err.Code != codes.AlreadyQueued {
		t.Fatalf("a second ticket of a: %v", err)
	}
	if _, err := q.Enqueue(ref("b"), Props{"x": 1.0}, Query{"x": {Eq: 2.0}}, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ref("c"), nil, nil, t0); err == nil || err.Code != codes.Busy ||
		err.Message != "queue duel holds 2 tickets (match.queues[].max_tickets)" {
		t.Fatalf("past max_tickets: %v", err)
	}
	if !q.Cancel(a.ID) || q.Cancel(a.ID) || q.Cancel("duel/nope") {
		t.Fatal("a cancel is true once, for a waiting ticket only")
	}
	_, expired := q.Pass(t0.Add(time.Minute + time.Second))
	if len(expired) != 1 || expired[0].Player() != "b" || q.Len() != 0 {
		t.Fatalf("expired %v, waiting %d", expired, q.Len())
	}

	// Return: the tickets wait again in their old order, before younger ones.
	q = testQueue(2, 2, 0)
	x, _ := q.Enqueue(ref("x"), nil, nil, t0)
	y, _ := q.Enqueue(ref("y"), nil, nil, t0)
	matches, _ := q.Pass(t0)
	if len(matches) != 1 {
		t.Fatal("no match")
	}
	z, _ := q.Enqueue(ref("z"), nil, Query{"k": {Eq: true}}, t0)
	q.Return(matches[0])
	if q.Len() != 3 || q.waiting[0] != x || q.waiting[1] != y || q.waiting[2] != z || !q.Cancel(x.ID) {
		t.Fatalf("after Return: %v", players(q.waiting))
	}
}

// TestCheckProps: §4.5's limits, each with the message that names its place.
func TestCheckProps(t *testing.T) {
	many := Props{}
	for i := range 17 {
		many[fmt.Sprintf("k%d", i)] = true
	}
	for _, c := range []struct {
		props Props
		query Query
		want  string
	}{
		{props: Props{"skill": 1500.0, "mode": "ranked", "pro": true}},
		{query: Query{"skill": {Min: num(1000)}, "mode": {Eq: "ranked"}}},
		{props: many, want: "props: more than 16 entries"},
		{props: Props{"Skill": 1.0}, want: `props: key "Skill": 1 to 32 bytes of a-z, 0-9 and _, not starting with a digit`},
		{props: Props{"1x": 1.0}, want: `props: key "1x"`},
		{props: Props{strings.Repeat("k", 33): 1.0}, want: "props: key"},
		{props: Props{"skill": map[string]any{}}, want: "props.skill: a string, number or boolean is required, got map[string]interface {}"},
		{props: Props{"name": strings.Repeat("n", 65)}, want: "props.name: a string of at most 64 bytes of UTF-8 is required"},
		{query: Query{"skill": {Min: num(1400), Max: num(1200)}}, want: "query.skill: min 1400 is above max 1200"},
		{query: Query{"skill": {}}, want: "query.skill: a {min = n, max = n} range needs min or max"},
	} {
		err := CheckProps(c.props)
		if err == nil {
			err = CheckQuery(c.query)
		}
		if (err == nil) != (c.want == "") || (err != nil && !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("props %v query %v: %v, want %q", c.props, c.query, err, c.want)
		}
	}
}

// TestMatchInvariants is §12's matchmaking guarantees under concurrent
// enqueues and cancels: 992 tickets from 32 goroutines, random props and
// queries, cancels at random, passes by the queue's owner meanwhile. Each
// ticket ends exactly once; a ticket whose cancel returned true is in no
// match; every match has min..max pairwise compatible tickets.
func TestMatchInvariants(t *testing.T) {
	q := testQueue(2, 4, 2*time.Second)
	q.cfg.MaxTickets = 1000
	type op struct {
		enqueue bool
		pid     string
		props   Props
		query   Query
		id      string
		reply   chan any
	}
	ops := make(chan op)
	var mu sync.Mutex
	ended := map[string]string{} // ticket id -> matched, cancelled, expired
	var matches [][]*Ticket
	end := func(id, how string) {
		if prev, dup := ended[id]; dup {
			t.Errorf("ticket %s ended twice: %s, then %s", id, prev, how)
		}
		ended[id] = how
	}
	now := time.Unix(1000, 0)
	done := make(chan struct{})
	go func() { // the queue's owner: ops and passes, one at a time
		defer close(done)
		pass := time.NewTicker(time.Millisecond)
		defer pass.Stop()
		for {
			select {
			case o, ok := <-ops:
				if !ok {
					return
				}
				mu.Lock()
				if o.enqueue {
					tk, err := q.Enqueue(ref(o.pid), o.props, o.query, now)
					if err != nil {
						o.reply <- err
					} else {
						o.reply <- tk.ID
					}
				} else {
					ok := q.Cancel(o.id)
					if ok {
						end(o.id, "cancelled")
					}
					o.reply <- ok
				}
				mu.Unlock()
			case <-pass.C:
				mu.Lock()
				now = now.Add(100 * time.Millisecond)
				ms, expired := q.Pass(now)
				for _, m := range ms {
					matches = append(matches, m)
					for _, tk := range m {
						end(tk.ID, "matched")
					}
				}
				for _, tk := range expired {
					end(tk.ID, "expired")
				}
				mu.Unlock()
			}
		}
	}()
	regions := []string{"eu", "us"}
	var wg sync.WaitGroup
	var all sync.Map // id -> true
	for g := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range 1000 / 32 {
				props := Props{"region": regions[r.IntN(2)], "skill": float64(r.IntN(3000))}
				var query Query
				switch r.IntN(3) {
				case 1:
					query = Query{"region": {Eq: props["region"]}}
				case 2:
					lo := props["skill"].(float64) - 500
					query = Query{"skill": {Min: &lo}}
				}
				reply := make(chan any, 1)
				ops <- op{enqueue: true, pid: fmt.Sprintf("p%d-%d", g, i), props: props, query: query, reply: reply}
				id, ok := (<-reply).(string)
				if !ok {
					t.Errorf("enqueue refused")
					return
				}
				all.Store(id, true)
				if r.IntN(4) == 0 {
					time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
					reply := make(chan any, 1)
					ops <- op{id: id, reply: reply}
					<-reply
				}
			}
		})
	}
	wg.Wait()
	// Past ticket_ttl every ticket has ended.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		left := q.Len()
		if left > 0 {
			now = now.Add(time.Minute) // the owner's next pass expires them
		}
		mu.Unlock()
		if left == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(ops)
	<-done

	n := 0
	all.Range(func(k, _ any) bool {
		n++
		if ended[k.(string)] == "" {
			t.Errorf("ticket %s never ended", k)
		}
		return true
	})
	if n != 992 || len(ended) != n { // 32 goroutines × 31
		t.Fatalf("%d tickets, %d ended", n, len(ended))
	}
	for _, m := range matches {
		if len(m) < 2 || len(m) > 4 {
			t.Fatalf("a match of %d tickets", len(m))
		}
		for i, a := range m {
			if ended[a.ID] != "matched" {
				t.Fatalf("ticket %s in a match ended %s", a.ID, ended[a.ID])
			}
			for _, b := range m[i+1:] {
				if !Compatible(a, b) {
					t.Fatalf("a match with %s and %s, which are not compatible", a.ID, b.ID)
				}
			}
		}
	}
	counts := map[string]int{}
	for _, how := range ended {
		counts[how]++
	}
	t.Logf("%d tickets: %v, %d matches", n, counts, len(matches))
	if counts["matched"] == 0 || counts["cancelled"] == 0 {
		t.Fatalf("outcomes %v: the test did not exercise matches and cancels", counts)
	}
}
