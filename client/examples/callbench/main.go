// Command callbench measures the calls per second of one Go client
// connection: P calls in flight at a time on route 1 of a gateway, for a
// fixed time after a one-second warm-up. clients/ts/bench/run.sh runs it
// beside the TypeScript client's calls.mjs against the same echo gateway.
//
//	go run ./client/examples/callbench -addr 127.0.0.1:7400 -p 16 -d 5s
//	go run ./client/examples/callbench -addr 127.0.0.1:7401 -transport ws -p 16
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/client"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7400", "the gateway listener")
	transport := flag.String("transport", "tcp", "tcp or ws")
	p := flag.Int("p", 1, "calls in flight")
	d := flag.Duration("d", 5*time.Second, "how long to measure")
	flag.Parse()
	ctx := context.Background()
	c, err := client.Dial(ctx, *addr, client.Options{Transport: *transport, HeartbeatEvery: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	body := map[string]any{"n": 1, "text": "hello"}
	run := func(d time.Duration) (int64, error) {
		var calls atomic.Int64
		var first atomic.Value
		until := time.Now().Add(d)
		var wg sync.WaitGroup
		for i := 0; i < *p; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var resp json.RawMessage
				for time.Now().Before(until) {
					cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					err := c.Call(cctx, 1, body, &resp)
					cancel()
					if err != nil {
						first.CompareAndSwap(nil, err)
						return
					}
					calls.Add(1)
				}
			}()
		}
		wg.Wait()
		if err, _ := first.Load().(error); err != nil {
			return calls.Load(), err
		}
		return calls.Load(), nil
	}
	if _, err := run(time.Second); err != nil { // warm-up
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	n, err := run(*d)
	elapsed := time.Since(start).Seconds()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf(`{"client":"go","addr":%q,"transport":%q,"p":%d,"calls":%d,"seconds":%.2f,"per_second":%.0f}`+"\n",
		*addr, *transport, *p, n, elapsed, float64(n)/elapsed)
}
