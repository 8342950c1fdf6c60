package game_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/client/examples/game"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
)

// The example game through its generated stubs (docs/clients.md): log in,
// join a room, move, receive the position push, and get a business error
// back as a *codes.Error.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, "../../../configs/actors.yaml", bootstrap.Options{
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
		fmt.Println(err)
		return
	}
	defer srv.Stop(ctx)

	c, err := client.Dial(ctx, srv.Gateway.Addr("game").String(), client.Options{
		Routes:    game.Routes,
		Reconnect: &client.Reconnect{},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	moved := make(chan game.PositionPush, 1)
	game.OnPosition(c, func(p game.PositionPush, err error) { moved <- p })

	me, err := game.Login(ctx, c, game.LoginRequest{User: new("alice")})
	if err != nil {
		fmt.Println(err)
		return
	}
	short, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	_, err = game.Move(short, c, game.MoveRequest{X: 1, Y: 1})
	var ce *codes.Error
	fmt.Println(me.PlayerID, "moves before joining:", errors.As(err, &ce), ce.Code)

	room, err := game.JoinRoom(ctx, c, game.JoinRoomRequest{Room: "lobby"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("joined", room.Room, "with", room.Members, "member")
	if _, err := game.Move(ctx, c, game.MoveRequest{X: 3, Y: 4}); err != nil {
		fmt.Println(err)
		return
	}
	p := <-moved
	fmt.Printf("%s is at %v,%v\n", p.PlayerID, p.X, p.Y)

	// Output:
	// alice moves before joining: true player.not_in_room
	// joined lobby with 1 member
	// alice is at 3,4
}
