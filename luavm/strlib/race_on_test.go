//go:build race

package strlib

// raceEnabled lets slow tests shrink their tables under -race.
const raceEnabled = true
