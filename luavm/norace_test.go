//go:build !race

package luavm_test

const raceEnabled = false

const patience = 1
