//go:build race

package acceptance

// raceEnabled says the test binary runs under the race detector, whose
// cost a latency measurement would measure.
const raceEnabled = true
