// Package wiretest is the harness the gateway and acceptance tests share
// for driving a real Shield server over loopback: starting a server from a
// config, capturing what it logs, reading its metrics, and talking to a
// listener over a raw socket as a transcript (send a frame, expect the
// next one, expect nothing for a while, expect the end). It is for tests
// only; no production code imports it.
package wiretest
