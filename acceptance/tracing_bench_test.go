package acceptance

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/tracing/otlptest"
)

// BenchmarkTracing is docs/tracing.md's cost of tracing: one logged-in
// session's forward_raw echo round trip through a real gateway on
// loopback, one request in flight, with tracing off (no tracing block),
// on at sample_ratio 0 (spans recorded, none exported) and on at 1 (every
// span exported to a real OTLP/HTTP receiver). allocs/op counts the whole
// process: the gateway, the VM and this lean client (which allocates
// nothing per request).
func BenchmarkTracing(b *testing.B) {
	for _, c := range []struct{ name, block string }{
		{"off", ""},
		{"ratio=0", "tracing: {enabled: true, endpoint: %q, sample_ratio: 0}\n"},
		{"ratio=1", "tracing: {enabled: true, endpoint: %q, sample_ratio: 1}\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			block := c.block
			if block != "" {
				block = fmt.Sprintf(block, otlptest.New(b).URL)
			}
			benchEcho(b, block)
		})
	}
}

// benchEcho runs b.N echo round trips on one logged-in idlen session of a
// gateway whose config has top (more top-level YAML).
func benchEcho(b *testing.B, top string) {
	dir := b.TempDir()
	script := filepath.Join(dir, "echo.lua")
	src := `local M = {}
function M.echo(ctx, client, req) return req end
function M.login(ctx, client, req) shield.client.bind(client, req, "echo") end
return M`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg := fmt.Sprintf(`node: {name: bench}
network:
  listeners:
    - {name: bench, address: "127.0.0.1:0", entry_service: echo}
log: {level: warn}
session: {rate_limit: {per_second: 0}}
%sactors:
  - name: echo
    script: %s
    rpc:
      routes:
        - {id: 1, name: raw_echo, binding: echo, action: forward_raw}
        - {id: 3, name: login, binding: login, requires_auth: false, action: forward_raw}
`, top, script)
	path := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, path, bootstrap.Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop(ctx)
	conn, err := net.Dial("tcp", srv.Gateway.Addr("bench").String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	frame := func(route uint16, id uint32, body string) []byte {
		f := make([]byte, 12, 12+len(body))
		binary.BigEndian.PutUint32(f[0:], uint32(8+len(body)))
		f[4] = 1
		binary.BigEndian.PutUint16(f[6:], route)
		binary.BigEndian.PutUint32(f[8:], id)
		return append(f, body...)
	}
	var hdr [12]byte
	buf := make([]byte, 256)
	roundTrip := func(f []byte) {
		if _, err := conn.Write(f); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			b.Fatal(err)
		}
		n := int(binary.BigEndian.Uint32(hdr[:])) - 8
		if binary.BigEndian.Uint16(hdr[6:]) == 0 || n > len(buf) {
			b.Fatalf("answer % x", hdr)
		}
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
	roundTrip(frame(3, 1, "bench-player"))
	echo := frame(1, 2, `{"x":1,"y":2}`)
	for range 1000 { // warm the pools and the VM
		roundTrip(echo)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		roundTrip(echo)
	}
}
