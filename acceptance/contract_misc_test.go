package acceptance

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestOutboundCap (SPEC §3, §7): the gateway never writes a frame longer
// than the listener's max_frame_bytes: a response that would be becomes
// the error client_rpc.resource_exhausted, a push is refused with it.
func TestOutboundCap(t *testing.T) {
	c := startContract(t, "")
	w := c.raw(t, "idlen")
	loginWithToken := func() {
		w.Send(req(cLogin, 1, map[string]string{"user": "tom"}))
		w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	}
	loginWithToken()
	const max = 65536
	w.Send(req(cBig, 2, map[string]int{"n": max - envelope.IdlenHeaderSize}))
	if f := w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2}); len(f.Body) != max-envelope.IdlenHeaderSize {
		t.Fatalf("a response of exactly max_frame_bytes: %d bytes", len(f.Body))
	}
	w.Send(req(cBig, 3, map[string]int{"n": max - envelope.IdlenHeaderSize + 1}))
	w.Expect(envelope.Frame{Kind: envelope.Error, RequestID: 3, Code: string(codes.ResourceExhausted)})
	before := c.EgressRejected("resource_exhausted")
	w.Send(req(cPushMe, 4, map[string]int{"n": max}))
	if f := w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 4}); string(f.Body) != `["client_rpc.resource_exhausted"]` {
		t.Fatalf("a push over max_frame_bytes: %s", f.Body)
	}
	if got := c.EgressRejected("resource_exhausted"); got != before+1 {
		t.Fatalf("egress_rejected{resource_exhausted} %v -> %v", before, got)
	}
}

// TestHeartbeatLimits (SPEC §5, §7): at most 10 heartbeats a second are
// echoed; the rest are dropped and counted as rate_limited.
func TestHeartbeatLimits(t *testing.T) {
	c := startContract(t, "")
	w := c.raw(t, "idlen")
	before := c.Dropped("rate_limited")
	const sent = 40
	for range sent {
		w.Send(envelope.Frame{Kind: envelope.Heartbeat})
		time.Sleep(5 * time.Millisecond) // 40 in 200 ms: four times the allowance
	}
	echoes := 0
	w.NC.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	for {
		f, err := envelope.Read(w.Codec, w.BR)
		if err != nil {
			break
		}
		if f.Kind == envelope.Heartbeat {
			echoes++
		}
	}
	if echoes < 5 || echoes > 13 {
		t.Fatalf("%d of %d heartbeats echoed in 200 ms, want about 10 (a burst of 10, 10 a second)", echoes, sent)
	}
	wiretest.Eventually(t, "the rest counted", func() bool { return c.Dropped("rate_limited") == before+float64(sent-echoes) })
}

// TestDrainHeadsUp (SPEC §9): at drain start every live session gets the
// gateway.drain_started status with grace_ms and every VM's draining hook
// runs; the closing notice comes at the end.
func TestDrainHeadsUp(t *testing.T) {
	c := startContract(t, "  shutdown_grace: 700ms")
	w := c.raw(t, "idlen")
	w.Send(req(cLogin, 1, map[string]string{"user": "uma"}))
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop() }()
	f := w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDrainStarted)})
	if f.GraceMS != 700 {
		t.Fatalf("grace_ms %d, want 700", f.GraceMS)
	}
	c.Logs.WaitFor(t, "draining hook", "svc", "lobby")
	c.Logs.WaitFor(t, "draining hook", "svc", "hall")
	// The session is still served during the grace.
	w.Send(req(cWho, 2, nil))
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})
	w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDraining)})
	w.ExpectClosed()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// TestWSHeaderTooLarge (SPEC §3): a WebSocket frame whose header announces
// more than max_frame_bytes closes the connection when the header is
// read, not when the payload has trickled in.
func TestWSHeaderTooLarge(t *testing.T) {
	s := startTransportEdge(t, "", tlistener{transport: "ws", envelope: "idlen"})
	before := s.ProtocolErrors("too_large")
	nc := wsHandshake(t, s.Addr("ws_idlen"))
	// A binary frame, FIN, masked, announcing 2^30 bytes, and nothing of it.
	hdr := []byte{0x82, 0x80 | 127}
	hdr = binary.BigEndian.AppendUint64(hdr, 1<<30)
	hdr = append(hdr, 1, 2, 3, 4)
	if _, err := nc.Write(hdr); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nc.SetReadDeadline(time.Now().Add(patience))
	buf := make([]byte, 512)
	for {
		if _, err := nc.Read(buf); err != nil {
			break // the close frame (1009) may come first; then the end
		}
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("closed after %v: the gateway waited for the payload", el)
	}
	wiretest.Eventually(t, "too_large counted", func() bool { return s.ProtocolErrors("too_large") == before+1 })
}

// wsHandshake dials addr and upgrades at /ws by hand, returning the raw
// connection right after the 101.
func wsHandshake(t testing.TB, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, patience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	key := make([]byte, 16)
	rand.Read(key)
	fmt.Fprintf(nc, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
		addr, base64.StdEncoding.EncodeToString(key))
	nc.SetReadDeadline(time.Now().Add(patience))
	br := bufio.NewReader(nc)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "101") {
		t.Fatalf("upgrade: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
	}
	if br.Buffered() > 0 {
		t.Fatal("bytes after the 101")
	}
	return nc
}

// TestPlayNeedsAdminPlay (SPEC §9): /play/ is served on the admin address
// only with admin.play: true.
func TestPlayNeedsAdminPlay(t *testing.T) {
	services, err := filepath.Abs("../configs/services")
	if err != nil {
		t.Fatal(err)
	}
	for _, play := range []bool{false, true} {
		t.Run(fmt.Sprint("play=", play), func(t *testing.T) {
			admin := freePort(t)
			cfg := fmt.Sprintf(`network:
  listeners:
    - {name: web, address: "127.0.0.1:0", transport: ws, entry_service: auth, protocol: {envelope: delimiter}}
  admin: {address: %q, play: %t}
actors:
%s`, admin, play, exampleActors(services))
			wiretest.Start(t, "play.yaml", cfg, nil)
			resp, err := http.Get("http://" + admin + "/play/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := http.StatusNotFound
			if play {
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Fatalf("/play/ answered %d, want %d", resp.StatusCode, want)
			}
		})
	}
}

// TestSIGHUPKeepsServing (SPEC §9): SIGHUP never stops the process; it
// logs that it was seen, and the gateway goes on serving.
func TestSIGHUPKeepsServing(t *testing.T) {
	p, game, _ := startProcess(t, drainConfig("idle_timeout: 60s"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "the SIGHUP logged", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range p.lines {
			if msg, _ := l["msg"].(string); strings.HasPrefix(msg, "SIGHUP") || strings.HasPrefix(msg, "reload") {
				return true
			}
		}
		return false
	})
	if d := probe(t, game, "after-hup"); d <= 0 {
		t.Fatal("no answer after SIGHUP")
	}
	select {
	case err := <-p.done:
		t.Fatalf("the process ended after SIGHUP: %v", err)
	default:
	}
}
