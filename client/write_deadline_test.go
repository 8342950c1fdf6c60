package client_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
)

// TestCallWriteHonoursContext: a gateway that stops reading must not hang
// a Call past its context. The request is far larger than the socket
// buffers, so the write blocks; Call returns once ctx's deadline passes,
// and the connection, which may hold half a frame, is closed.
func TestCallWriteHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			accepted <- nc // never read
		}
	}()
	c, err := client.Dial(context.Background(), ln.Addr().String(), client.Options{HeartbeatEvery: -1, MaxFrameBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case nc := <-accepted:
		defer nc.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("not accepted")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Call(ctx, 1, make([]byte, 32<<20), nil) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a 32 MiB request to a peer that never reads succeeded")
		}
		// It failed because its context ended, not for another reason.
		var ne net.Error
		if !errors.Is(err, context.DeadlineExceeded) && (!errors.As(err, &ne) || !ne.Timeout()) {
			t.Fatalf("Call: %v, want the context's deadline (a timeout)", err)
		}
	case <-time.After(5 * time.Second):
		c.Close() // unblock the write
		t.Fatal("Call still writing 5 s after its 200 ms context ended")
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the connection was not closed after a failed write")
	}
}
