//go:build linux

package gateway

import (
	"testing"
	"time"
)

// ShortenFreeing lowers the parker's giving back of stacks
// (park_linux.go) to parks parked connections, quiet and every, until t
// ends. Its tests must not run in parallel with other gateways'.
func ShortenFreeing(t testing.TB, parks int, quiet, every time.Duration) {
	p, q, w, e := freeParks, freeQuiet, freeWait, freeEvery
	freeParks, freeQuiet, freeWait, freeEvery = parks, quiet, 10*quiet, every
	t.Cleanup(func() { freeParks, freeQuiet, freeWait, freeEvery = p, q, w, e })
}
