// Package luatest runs real Lua services for tests: it writes an
// actors.yaml and its scripts to a temp dir, compiles them through
// bootstrap, starts a service.Runtime whose only fake is the gateway (a
// Recorder of what the services send), captures the JSON logs, and checks
// at cleanup that the runtime stopped and left no goroutine behind.
//
// It is for tests only: the harnesses of luavm and service import it and
// keep what is their own (luavm's case tables, service's metrics) beside
// their tests.
package luatest
