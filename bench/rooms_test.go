package bench_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bench"
	"github.com/shieldrpc/shield/bootstrap"
)

// TestRoomsRun runs the rooms bench briefly against its game in this
// process, the room kind and the baseline: members get state frames
// every tick, every one applies, and the inputs go out.
func TestRoomsRun(t *testing.T) {
	dir := t.TempDir()
	path, err := bench.RoomsConfig{Hz: 20}.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, path, bootstrap.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	for _, baseline := range []bool{false, true} {
		r, err := bench.Rooms(ctx, bench.RoomsOptions{Addr: srv.Gateway.Addr("rooms").String(), Rooms: 4, Members: 3, Hz: 20,
			Fields: 20, Changing: 3, Baseline: baseline, Duration: time.Second, Warmup: 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("baseline %v: %v", baseline, err)
		}
		t.Logf("baseline %v: %s", baseline, r)
		// 12 members at 20 Hz for 1 s: about 240 frames each way.
		if r.Errors != 0 || r.Frames < 120 || r.Inputs < 120 || r.Delivery.Count() != r.Frames {
			t.Fatalf("baseline %v: %+v", baseline, r)
		}
	}
}
