package acceptance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/wiretest"
)

const broadcastYAML = `node: {name: gw-bcast}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: broadcast}
  admin: {address: "127.0.0.1:0"}
log: {format: json, level: info}
session: {outbound_queue: 64, write_timeout: 2s, idle_timeout: 120s, shutdown_grace: 1s}
actors:
  - name: broadcast
    script: %s
    handler_timeout: 60s
    rpc:
      routes:
        - {id: 1, name: login, binding: login, requires_auth: false}
        - {id: 2, name: blast, binding: blast, requires_auth: false}
        - {id: 3, name: flood, binding: flood, requires_auth: false}
        - {id: 101, name: note, binding: note, direction: s2c}
`

// TestBroadcastPastASlowMember: a room of 1,000 where one member never
// reads and its queue is full. Broadcasts never wait for it: it refuses
// them (queue_full) and is closed as a slow consumer after write_timeout,
// while the other 999 get every push.
func TestBroadcastPastASlowMember(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 sessions")
	}
	script, _ := filepath.Abs("testdata/broadcast.lua")
	_, game, admin := startProcess(t, fmt.Sprintf(broadcastYAML, script))
	const members, count, size = 1000, 20, 1024

	conns := dialMany(t, game, members)
	readers := make([]*bufio.Reader, members)
	for i, c := range conns {
		readers[i] = bufio.NewReader(c)
		c.SetDeadline(time.Now().Add(60 * time.Second))
		if _, err := c.Write(idlenFrame(1, 1, fmt.Sprintf(`{"user":"m%d"}`, i))); err != nil {
			t.Fatal(err)
		}
		if route, _, body, err := readIdlen(readers[i]); err != nil || route != 1 {
			t.Fatalf("login %d: %s %v", i, body, err)
		}
	}
	// m0 stops reading, with as little buffer as the kernel allows.
	conns[0].(*net.TCPConn).SetReadBuffer(1024)

	var complete atomic.Int64
	var wg sync.WaitGroup
	for i := 1; i < members; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < count; {
				route, _, _, err := readIdlen(readers[i])
				if err != nil {
					t.Errorf("member %d after %d notes: %v", i, n, err)
					return
				}
				if route == 101 {
					n++
				}
			}
			complete.Add(1)
		}()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, game, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Fill m0's queue first: its kernel buffers, then its 64 frames. A
	// refused push alone does not say the queue will stay full: it only
	// says the flood outran m0's writer, which may still be moving frames
	// into kernel buffers of any size, and would then make room for the
	// broadcast. The queue stays full once the writer is blocked on a full
	// socket: poll until a push of the broadcast's size has been refused
	// at once for a while (or m0 is gone: write_timeout closed it, refused
	// all the same). Only the count of pushes depends on the kernel's
	// buffers.
	type floodResult struct {
		Sent int    `json:"sent"`
		Code string `json:"code"`
	}
	var flood, topUp floodResult
	if err := c.Call(ctx, 3, map[string]int{"member": 1, "size": 32 << 10, "max": 10000}, &flood); err != nil {
		t.Fatal(err)
	}
	if flood.Code != "client_rpc.queue_full" {
		t.Fatalf("flooding the slow member: %+v", flood)
	}
	// Full means refused at once by every poll for 300 ms: the kernel
	// takes more of a blocked writer's bytes in steps (its send buffer
	// grows, a zero-window probe every 200 ms or more), and each step
	// makes room in the queue for a while.
	topped := 0
	var fullSince time.Time
	wiretest.Eventually(t, "the slow member's queue full and its writer blocked", func() bool {
		if err := c.Call(ctx, 3, map[string]int{"member": 1, "size": size, "max": 10000}, &topUp); err != nil {
			t.Fatal(err)
		}
		if topUp.Code != "client_rpc.queue_full" && topUp.Code != "client_rpc.session_not_found" {
			t.Fatalf("topping up the slow member's queue: %+v", topUp)
		}
		topped += topUp.Sent
		switch {
		case topUp.Sent > 0:
			fullSince = time.Time{}
		case fullSince.IsZero():
			fullSince = time.Now()
		}
		return !fullSince.IsZero() && time.Since(fullSince) >= 300*time.Millisecond
	})
	var got struct {
		Accepted int                       `json:"accepted"`
		Rejected map[string]map[string]int `json:"rejected"`
	}
	start := time.Now()
	var body []byte
	if err := c.Call(ctx, 2, map[string]int{"count": count, "size": size}, &body); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Logf("slow member full after %d pushes of 32 KiB and %d of %d B (%s); %d broadcasts of %d B to %d members in %v: %d accepted; the slow member refused %v; %d of %d others got all",
		flood.Sent, topped, size, topUp.Code, count, size, members, took, got.Accepted, got.Rejected["m0"], complete.Load(), members-1)
	if complete.Load() != members-1 {
		t.Fatalf("%d of %d readers got every push", complete.Load(), members-1)
	}
	for player, codes := range got.Rejected {
		if player != "m0" {
			t.Fatalf("a reading member was refused: %s %v", player, codes)
		}
	}
	if got.Accepted < (members-1)*count {
		t.Fatalf("accepted %d, want at least %d", got.Accepted, (members-1)*count)
	}
	if len(got.Rejected["m0"]) == 0 {
		t.Fatalf("the slow member was never refused: its queue never filled")
	}
	wiretest.Eventually(t, "the slow member closed as a slow consumer", func() bool {
		return scrape(t, admin, `shield_sessions_closed_total{reason="slow_consumer"}`) == 1
	})
}
