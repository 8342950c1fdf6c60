// Package bots runs many clients of a gateway at once, each with a script
// of its own: for load and soak tests, for filling a room in a demo, and
// for `gateway bench`-style tools.
//
//	res := bots.Run(ctx, bots.Config{Addr: "127.0.0.1:7000", N: 500, Ramp: 5 * time.Second},
//		func(ctx context.Context, b *bots.Bot) error {
//			if _, err := game.Login(ctx, b.Client, game.LoginRequest{User: new(b.Name())}); err != nil {
//				return err
//			}
//			for ctx.Err() == nil {
//				if err := b.Measure(func() error { _, err := game.Move(ctx, b.Client, game.MoveRequest{X: 1}); return err }); err != nil {
//					return err
//				}
//			}
//			return nil
//		})
//	fmt.Println(res)
//
// Every bot is one client.Client on its own connection and its own
// goroutine. Run dials them spread over Ramp (a thundering herd of
// handshakes measures the accept queue, not the game), runs each script
// until it returns or ctx ends, closes every client, and reports.
package bots

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shieldrpc/shield/client"
)

// Config says how many bots to run and where.
type Config struct {
	Addr    string         // the gateway's listener, host:port
	Options client.Options // each bot's client options (Reconnect too, if wanted)
	N       int            // how many bots
	// Ramp spreads the dials evenly over this long; 0 dials them all at once.
	Ramp time.Duration
	// DialTimeout bounds each dial; default 10s.
	DialTimeout time.Duration
	// Prefix names the bots: Prefix + index; default "bot-".
	Prefix string
}

// Script is what one bot does. It should return when ctx ends; an error
// (other than ctx's) is counted against the bot.
type Script func(ctx context.Context, b *Bot) error

// Bot is one running bot.
type Bot struct {
	ID     int // 0..N-1
	Client *client.Client

	prefix string
	mu     sync.Mutex // guards calls, errors, lat
	calls  int
	errors int
	lat    []time.Duration
}

// Name is the bot's name, for a login: Prefix + ID.
func (b *Bot) Name() string { return fmt.Sprintf("%s%d", b.prefix, b.ID) }

// Measure runs one request-like step and records its latency and whether
// it failed; it returns fn's error.
func (b *Bot) Measure(fn func() error) error {
	start := time.Now()
	err := fn()
	d := time.Since(start)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if err != nil {
		b.errors++
	} else if len(b.lat) < maxSamples {
		b.lat = append(b.lat, d)
	}
	return err
}

// maxSamples bounds the latencies one bot keeps (about 1 MiB of them).
const maxSamples = 1 << 17

// Result is what a Run did.
type Result struct {
	Bots       int           // bots that connected and ran
	DialErrors int           // bots that never connected
	Failed     int           // scripts that returned an error other than ctx's
	Calls      int           // steps measured (Bot.Measure), failed ones too
	CallErrors int           // steps that returned an error
	Elapsed    time.Duration // from the first dial to the last close
	P50, P99   time.Duration // latency of the measured steps that succeeded
	Max        time.Duration
	// Errors holds the first few errors (dials and scripts), for the report.
	Errors []error
}

// PerSecond is measured steps per second over the run.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Calls) / r.Elapsed.Seconds()
}

// String is a one-line report.
func (r Result) String() string {
	return fmt.Sprintf("%d bots (%d dial errors, %d failed), %d calls (%d errors) in %v: %.0f/s, p50 %v p99 %v max %v",
		r.Bots, r.DialErrors, r.Failed, r.Calls, r.CallErrors, r.Elapsed.Round(time.Millisecond), r.PerSecond(), r.P50, r.P99, r.Max)
}

// maxErrors bounds Result.Errors.
const maxErrors = 8

// Run runs cfg.N bots with script until every script has returned (or ctx
// ended and they returned), then closes every client and reports.
func Run(ctx context.Context, cfg Config, script Script) Result {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "bot-"
	}
	start := time.Now()
	var (
		mu  sync.Mutex // guards res and bots
		res Result
		all []*Bot
		wg  sync.WaitGroup
	)
	note := func(err error) {
		if len(res.Errors) < maxErrors {
			res.Errors = append(res.Errors, err)
		}
	}
	for i := 0; i < cfg.N; i++ {
		if cfg.Ramp > 0 && i > 0 {
			at := start.Add(cfg.Ramp * time.Duration(i) / time.Duration(cfg.N))
			t := time.NewTimer(time.Until(at))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
			c, err := client.Dial(dctx, cfg.Addr, cfg.Options)
			cancel()
			if err != nil {
				mu.Lock()
				res.DialErrors++
				note(fmt.Errorf("bot %d: dial: %w", id, err))
				mu.Unlock()
				return
			}
			defer c.Close()
			b := &Bot{ID: id, Client: c, prefix: cfg.Prefix}
			mu.Lock()
			res.Bots++
			all = append(all, b)
			mu.Unlock()
			if err := script(ctx, b); err != nil && !(ctx.Err() != nil && errors.Is(err, ctx.Err())) {
				mu.Lock()
				res.Failed++
				note(fmt.Errorf("bot %d: %w", id, err))
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	var lat []time.Duration
	for _, b := range all {
		b.mu.Lock()
		res.Calls += b.calls
		res.CallErrors += b.errors
		lat = append(lat, b.lat...)
		b.mu.Unlock()
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50, res.P99, res.Max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return res
}
