//go:build race

package service_test

// raceEnabled: the race detector slows Lua by about ten times, so tests
// that bound how long something takes allow for it.
const raceEnabled = true

// patience scales the time bounds of tests.
const patience = 5
