package acceptance

import (
	"errors"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
)

// TestLuaGrowthFromClientNumbers (issue 19, SPEC §8, SECURITY.md): a
// client's number handed to table.insert as the position, or to unpack as
// the count, answers within a 1 s handler budget and allocates little,
// through a real gateway. Unpatched gopher-lua took 1.9 s and 974 MB for
// table.insert(t, 2^24, v), and unpack(t, 1, n) could not be interrupted
// for up to 1.8 s. Each call is made 10 times; the gateway's peak RSS
// (VmHWM) grows by less than 64 MiB over all of them.
func TestLuaGrowthFromClientNumbers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a gateway process")
	}
	h := startHostile(t, hostileSetup{actorKeys: "handler_timeout: 1s\n    "}, procOptions{})
	c := h.dial(t, client.Options{})
	peak0 := procStatusKB(t, h.pid(), "VmHWM") * 1024
	for _, tc := range []struct {
		name  string
		route uint32
		req   map[string]float64
		want  map[string]float64 // the answer's fields, or nil for an error
		code  codes.Code
	}{
		{"table.insert at 2^24", hTInsert, map[string]float64{"pos": 1 << 24}, map[string]float64{"entries": 1}, ""},
		{"table.insert at 2^26", hTInsert, map[string]float64{"pos": 1 << 26}, map[string]float64{"entries": 1}, ""},
		{"table.insert at 2^31-1", hTInsert, map[string]float64{"pos": 1<<31 - 1}, map[string]float64{"entries": 1}, ""},
		{"table.insert at 2^53", hTInsert, map[string]float64{"pos": 1 << 53}, map[string]float64{"entries": 1}, ""},
		{"table.insert at -2^31", hTInsert, map[string]float64{"pos": -(1 << 31)}, map[string]float64{"entries": 1}, ""},
		{"unpack of 200,000", hUnpack, map[string]float64{"n": 200000}, map[string]float64{"count": 200000}, ""},
		{"unpack of 2^24", hUnpack, map[string]float64{"n": 1 << 24}, nil, codes.HandlerFailed},
		{"unpack of 2^31", hUnpack, map[string]float64{"n": 1 << 31}, nil, codes.HandlerFailed},
		{"unpack of 2^53", hUnpack, map[string]float64{"n": 1 << 53}, nil, codes.HandlerFailed},
		{"unpack of -2^31", hUnpack, map[string]float64{"n": -(1 << 31)}, map[string]float64{"count": 0}, ""},
	} {
		var slowest time.Duration
		for range 10 {
			var got map[string]float64
			start := time.Now()
			err := callErr(t, c, tc.route, tc.req, &got)
			slowest = max(slowest, time.Since(start))
			var ce *codes.Error
			switch {
			case tc.want == nil && (!errors.As(err, &ce) || ce.Code != tc.code):
				t.Fatalf("%s: %v %v, want %s (not a timeout: the budget is 1 s)", tc.name, got, err, tc.code)
			case tc.want != nil && err != nil:
				t.Fatalf("%s: %v (a timeout means it ran past the 1 s budget)", tc.name, err)
			case tc.want != nil:
				for k, v := range tc.want {
					if got[k] != v {
						t.Fatalf("%s: %v, want %v", tc.name, got, tc.want)
					}
				}
			}
		}
		t.Logf("%s: slowest of 10 in %v", tc.name, slowest)
	}
	peak := procStatusKB(t, h.pid(), "VmHWM") * 1024
	t.Logf("peak RSS %s -> %s", mib(peak0), mib(peak))
	if peak-peak0 > 64<<20 {
		t.Errorf("peak RSS grew %s over the calls", mib(peak-peak0))
	}
}
