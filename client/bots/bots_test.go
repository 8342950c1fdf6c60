package bots_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/client/bots"
	"github.com/shieldrpc/shield/client/examples/game"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestRunFillsARoom: 20 bots log in, join one room and move 10 times
// each; every move is measured, and every bot sees the others move.
func TestRunFillsARoom(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, "../../configs/actors.yaml", bootstrap.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Override: func(c *config.Config) {
			for i := range c.Network.Listeners {
				c.Network.Listeners[i].Address = "127.0.0.1:0"
			}
			c.Network.Admin = nil
			c.Storage = nil // no store files in configs/data: profiles live in memory
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Stop(ctx)
		wiretest.WaitGoroutines(t, before)
	}()
	const n, moves = 20, 10
	var seen atomic.Int64
	res := bots.Run(ctx, bots.Config{Addr: srv.Gateway.Addr("game").String(), N: n, Ramp: 100 * time.Millisecond,
		Options: client.Options{HeartbeatEvery: -1}},
		func(ctx context.Context, b *bots.Bot) error {
			last := make(chan struct{}) // its own last move came back as a push
			game.OnPosition(b.Client, func(p game.PositionPush, _ error) {
				seen.Add(1)
				if p.PlayerID == b.Name() && p.X == moves-1 {
					close(last)
				}
			})
			if _, err := game.Login(ctx, b.Client, game.LoginRequest{User: new(b.Name())}); err != nil {
				return err
			}
			if _, err := game.JoinRoom(ctx, b.Client, game.JoinRoomRequest{Room: "bots"}); err != nil {
				return err
			}
			for i := 0; i < moves; i++ {
				if err := b.Measure(func() error {
					_, err := game.Move(ctx, b.Client, game.MoveRequest{X: float64(i), Y: float64(b.ID)})
					return err
				}); err != nil {
					return err
				}
			}
			select {
			case <-last:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	if res.Bots != n || res.DialErrors != 0 || res.Failed != 0 || res.Calls != n*moves || res.CallErrors != 0 || res.P50 <= 0 {
		t.Fatalf("%v; errors %v", res, res.Errors)
	}
	if seen.Load() < n*moves { // each bot sees at least its own moves
		t.Fatalf("%d pushes seen, want at least %d", seen.Load(), n*moves)
	}
	t.Log(res)
}

// TestRunCountsDialErrors: bots that cannot connect are counted, not run.
func TestRunCountsDialErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ran := atomic.Int64{}
	res := bots.Run(context.Background(), bots.Config{Addr: addr, N: 3, DialTimeout: time.Second},
		func(context.Context, *bots.Bot) error { ran.Add(1); return nil })
	if res.DialErrors != 3 || res.Bots != 0 || ran.Load() != 0 || len(res.Errors) != 3 || !strings.Contains(res.Errors[0].Error(), "dial") {
		t.Fatalf("%v; errors %v", res, res.Errors)
	}
}
