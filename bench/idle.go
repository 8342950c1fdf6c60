package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
)

// DialIdle opens n connections to addr that then send nothing, each logged
// in first on route login (0: none) as Run's are, a few at a time. On
// error it returns the connections it opened, for the caller to close.
func DialIdle(ctx context.Context, addr string, n int, login uint32) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	run := runs.Add(1)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // guards first
		first error
	)
	const workers = 8
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d net.Dialer
			for i := w; i < n; i += workers {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err == nil {
					conns[i] = c
					if login != 0 {
						err = streamConn{c}.login(ctx, frameOf(login, loginID, fmt.Appendf(nil, "idle-%d-%d-%d", os.Getpid(), run, i)))
					}
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("connection %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	out := conns[:0]
	for _, c := range conns {
		if c != nil {
			out = append(out, c)
		}
	}
	return out, first
}
