package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/config"
)

// The example game (configs/actors.yaml): log in, join a room, move, and
// receive the position push that the room service sends everyone in it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Serve the example game on a free port.
	srv, err := bootstrap.Start(ctx, "../configs/actors.yaml", bootstrap.Options{
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

	c, err := client.Dial(ctx, srv.Gateway.Addr("game").String(), client.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	positions := make(chan string, 1)
	c.OnPush(2101, func(body []byte) { positions <- string(body) })

	var login struct {
		PlayerID string `json:"player_id"`
	}
	if err := c.Call(ctx, 1001, map[string]string{"user": "alice"}, &login); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("logged in as", login.PlayerID)
	if err := c.Call(ctx, 2002, map[string]string{"room": "lobby"}, nil); err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Call(ctx, 2001, map[string]int{"x": 3, "y": 4}, nil); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("position", <-positions)

	// A request on a route that needs a login, from a fresh session, is
	// dropped at the edge: no answer comes.
	guest, err := client.Dial(ctx, srv.Gateway.Addr("game").String(), client.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer guest.Close()
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	fmt.Println("guest move:", guest.Call(short, 2001, map[string]int{"x": 1}, nil))

	// Output:
	// logged in as alice
	// position {"player_id":"alice","x":3,"y":4}
	// guest move: context deadline exceeded
}
